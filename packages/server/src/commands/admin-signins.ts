import { ADMINISTRATOR } from '@envkeep/env-api-plugin'
import { adminDomain, openData, report, requireAccount, requireString, type CommandContext } from './context.js'

/** `admin signins revoke --email E`: ends every CLI sign-in and web session of a person. */
export async function adminSigninsRevoke(ctx: CommandContext): Promise<number> {
  const email = requireString(ctx, 'email')
  const data = await openData(ctx.config)
  try {
    const person = await requireAccount(data, email)
    const revoked = await adminDomain(ctx, data).revokeAllSignIns(ADMINISTRATOR, person.id)
    const sessions = await data.accounts.deleteSessionsOf(person.id)
    return report(ctx, `${revoked} sign-in(s) revoked and ${sessions} web session(s) ended for ${person.email}`, {
      email: person.email,
      revoked,
      sessions,
    })
  } finally {
    await data.close()
  }
}

import type { Role } from '@envkeep/env-api-plugin'
import { adminLog, openData, report, requireAccount, requireString, resolveVault, UsageFailure, type CommandContext } from './context.js'

const ROLES: readonly Role[] = ['owner', 'editor', 'viewer']

/** `admin member add --vault V --email E --role R`: adds a member or changes their role. */
export async function adminMemberAdd(ctx: CommandContext): Promise<number> {
  const v = requireString(ctx, 'vault')
  const email = requireString(ctx, 'email')
  const role = requireString(ctx, 'role') as Role
  if (!ROLES.includes(role)) throw new UsageFailure(`--role must be one of ${ROLES.join(', ')}`)
  const data = await openData(ctx.config)
  try {
    const vault = await resolveVault(data, v)
    const person = await requireAccount(data, email)
    const before = (await data.storage.listMembers(vault.id)).find((m) => m.personId === person.id)
    await data.storage.setMember(
      { vaultId: vault.id, personId: person.id, role },
      { ...adminLog(vault.id, before ? 'member_changed' : 'member_added', ctx.now(), null, []), subject: person.id, detail: role },
    )
    return report(ctx, `${person.email} is ${role} of vault ${vault.name} (${vault.id})`, {
      vault: vault.id,
      email: person.email,
      role,
      changed: before !== undefined,
    })
  } finally {
    await data.close()
  }
}

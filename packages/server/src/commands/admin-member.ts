import { ADMINISTRATOR, isRole, ROLES } from '@envkeep/env-api-plugin'
import { adminDomain, openData, report, requireString, UsageFailure, type CommandContext } from './context.js'

/**
 * `admin member add --vault V --email E --role R`: adds a member or changes
 * their role, by the pages' rules (a vault keeps at least one owner: the
 * last owner cannot be made editor or viewer), logged as the server administrator.
 */
export async function adminMemberAdd(ctx: CommandContext): Promise<number> {
  const v = requireString(ctx, 'vault')
  const email = requireString(ctx, 'email')
  const role = requireString(ctx, 'role')
  if (!isRole(role)) throw new UsageFailure(`--role must be one of ${ROLES.join(', ')}`)
  const data = await openData(ctx.config)
  try {
    const domain = adminDomain(ctx, data)
    const vault = await domain.findVaultForAdministrator(v)
    const r = await domain.addMember(ADMINISTRATOR, { vaultId: vault.id, email, role, mode: 'any' })
    return report(ctx, `${email} is ${role} of vault ${vault.name} (${vault.id})`, {
      vault: vault.id,
      email,
      role,
      changed: r.previous !== null,
    })
  } finally {
    await data.close()
  }
}

/** `admin member remove --vault V --email E`: removes a member (never the last owner). */
export async function adminMemberRemove(ctx: CommandContext): Promise<number> {
  const v = requireString(ctx, 'vault')
  const email = requireString(ctx, 'email')
  const data = await openData(ctx.config)
  try {
    const domain = adminDomain(ctx, data)
    const vault = await domain.findVaultForAdministrator(v)
    const r = await domain.removeMemberByEmail(ADMINISTRATOR, { vaultId: vault.id, email })
    return report(ctx, `${email} (${r.previous}) removed from vault ${vault.name} (${vault.id})`, {
      vault: vault.id,
      email,
      previous: r.previous,
    })
  } finally {
    await data.close()
  }
}

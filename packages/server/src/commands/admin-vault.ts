import { ADMINISTRATOR, DEFAULT_ENVIRONMENTS, vaultNameProblem } from '@envkeep/env-api-plugin'
import { adminDomain, openData, report, requireAccount, requireString, UsageFailure, type CommandContext } from './context.js'

export { DEFAULT_ENVIRONMENTS }

/** `admin vault create --name N --owner EMAIL` */
export async function adminVaultCreate(ctx: CommandContext): Promise<number> {
  const name = requireString(ctx, 'name')
  const ownerEmail = requireString(ctx, 'owner')
  const problem = vaultNameProblem(name)
  if (problem) throw new UsageFailure(problem)
  const data = await openData(ctx.config)
  try {
    const owner = await requireAccount(data, ownerEmail)
    const vault = await adminDomain(ctx, data).createVault(ADMINISTRATOR, { name, ownerId: owner.id })
    return report(ctx, `vault created: ${vault.name} (${vault.id}), owner ${owner.email}`, {
      vault: { id: vault.id, name: vault.name, plan: vault.plan, owner: owner.email, environments: DEFAULT_ENVIRONMENTS.map((e) => e.name) },
    })
  } finally {
    await data.close()
  }
}

/** `admin audit`: the server-level audit log (deleted vaults: who, which, when), newest first. */
export async function adminAudit(ctx: CommandContext): Promise<number> {
  const data = await openData(ctx.config)
  try {
    const rows = await adminDomain(ctx, data).listAudit(ADMINISTRATOR, { limit: 500 })
    const who = async (id: string | null) => (id === null ? 'server administrator' : ((await data.accounts.getAccount(id))?.email ?? id))
    const entries = await Promise.all(
      rows.map(async (r) => ({ at: r.at.toISOString(), by: await who(r.personId), action: r.action, vault: { id: r.vaultId, name: r.vaultName } })),
    )
    const events = await Promise.all(
      (await data.accounts.listSigninEvents(500)).map(async (e) => ({
        at: e.at.toISOString(),
        event: e.event,
        account: e.accountId === null ? null : await who(e.accountId),
        detail: e.detail,
        address: e.address,
      })),
    )
    const lines = [
      ...entries.map((e) => ({ at: e.at, line: `${e.at}  ${e.action}  ${e.vault.name} (${e.vault.id})  by ${e.by}` })),
      ...events.map((e) => ({
        at: e.at,
        line: `${e.at}  ${e.event}  ${e.account ?? '(no such account)'}${e.detail ? `  ${e.detail}` : ''}${e.address ? `  from ${e.address}` : ''}`,
      })),
    ].sort((a, b) => (a.at < b.at ? 1 : a.at > b.at ? -1 : 0))
    const text = lines.length === 0 ? 'no audit entry' : lines.map((l) => l.line).join('\n')
    return report(ctx, text, { entries, signinEvents: events })
  } finally {
    await data.close()
  }
}

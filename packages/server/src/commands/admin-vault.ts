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

import { randomUUID } from 'node:crypto'
import type { EnvironmentInfo } from '@envkeep/env-api-plugin'
import { adminLog, openData, report, requireAccount, requireString, UsageFailure, type CommandContext } from './context.js'

/** What a new vault gets: production is owners-only. */
export const DEFAULT_ENVIRONMENTS: readonly EnvironmentInfo[] = Object.freeze([
  { name: 'development', ownersOnly: false },
  { name: 'preview', ownersOnly: false },
  { name: 'production', ownersOnly: true },
])

/** `admin vault create --name N --owner EMAIL` */
export async function adminVaultCreate(ctx: CommandContext): Promise<number> {
  const name = requireString(ctx, 'name')
  const ownerEmail = requireString(ctx, 'owner')
  if (name.length > 100) throw new UsageFailure('--name must be at most 100 characters')
  const plan = Object.prototype.hasOwnProperty.call(ctx.config.plans, 'self-hosted') ? 'self-hosted' : Object.keys(ctx.config.plans)[0]!
  const data = await openData(ctx.config)
  try {
    const owner = await requireAccount(data, ownerEmail)
    const id = randomUUID()
    const vault = await data.storage.createVault(
      { id, name, ownerId: owner.id, plan, environments: DEFAULT_ENVIRONMENTS, now: ctx.now() },
      adminLog(id, 'vault_created', ctx.now(), null, []),
    )
    return report(ctx, `vault created: ${vault.name} (${vault.id}), owner ${owner.email}`, {
      vault: { id: vault.id, name: vault.name, plan: vault.plan, owner: owner.email, environments: DEFAULT_ENVIRONMENTS.map((e) => e.name) },
    })
  } finally {
    await data.close()
  }
}

import type { OverLimit, StorageLimit, VaultRecord } from '../adapters/vault-store.js'
import { fail, vaultTag, type DomainFailure } from './failure.js'

const NO_LIMIT: StorageLimit = Object.freeze({ maxVariables: Number.MAX_SAFE_INTEGER, maxBytes: Number.MAX_SAFE_INTEGER })

/** The plan's storage limit of a vault (an unknown plan gets `self-hosted`'s). Storage checks it in its transaction. */
export function limitOf(plans: Readonly<Record<string, StorageLimit>>, plan: string): StorageLimit {
  return (Object.hasOwn(plans, plan) ? plans[plan] : undefined) ?? plans['self-hosted'] ?? NO_LIMIT
}

/** The plan a new vault gets: `self-hosted` when the table has it, else its first plan. */
export function defaultPlan(plans: Readonly<Record<string, StorageLimit>>): string {
  const names = Object.keys(plans)
  return names.includes('self-hosted') ? 'self-hosted' : (names[0] ?? 'self-hosted')
}

/** The refusal of a change over the limit: names the vault, the limit, the plan and the usage (decisions.md). */
export function overLimit(vault: VaultRecord, r: OverLimit, change: 'this push' | 'this change'): DomainFailure {
  const what = r.limit === 'variables' ? 'variables' : 'bytes of stored values'
  return fail.storageLimit(
    `vault ${vaultTag(vault.id)} is at its storage limit of ${r.max} ${what} on plan ${vault.plan}; with ${change} it would use ${r.usage}`,
  )
}

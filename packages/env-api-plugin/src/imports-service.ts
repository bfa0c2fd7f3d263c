import type { Keyring } from './adapters/keyring.js'
import type { ImportRecord, Storage } from './adapters/storage.js'
import { personActor } from './domain/actor.js'
import { DomainFailure } from './domain/failure.js'
import { decidePush } from './domain/pushes.js'
import { createVaultCrypto } from './vault-service.js'

export interface DecideImportInput {
  readonly importId: string
  readonly decision: 'applied' | 'rejected'
  /** the person deciding */
  readonly personId: string
  readonly now: Date
  /** for the access log */
  readonly signInId?: string | null
  readonly clientId?: string | null
  readonly address?: string | null
  /**
   * The host's keyring (the one given to the plugin). Applying a push keeps
   * the values it replaces in history, sealed, so it needs the key: without
   * it, applying throws ApiError 503 not_configured (rejecting does not).
   */
  readonly keyring?: Keyring | null
}

export type DecideImportOutcome =
  /** the push is now applied (all values written) or rejected */
  | { readonly outcome: 'decided'; readonly import: ImportRecord }
  /** unknown push, or a vault/environment the person cannot see: never says which */
  | { readonly outcome: 'not_found' }
  /** the person sees the push but may not decide it; `reason` in words */
  | { readonly outcome: 'forbidden'; readonly reason: string; readonly import: ImportRecord }
  /** already decided or expired: nothing changed */
  | { readonly outcome: 'not_pending'; readonly import: ImportRecord }

/**
 * Decides a pending push, for a host's own pages: the domain layer's
 * `decidePush` (who may, the second-person rule, all values or none, the
 * log entry) with its refusals as outcomes.
 */
export async function decideImport(storage: Storage, input: DecideImportInput): Promise<DecideImportOutcome> {
  const imp = await storage.getImport(input.importId, input.now)
  if (!imp) return { outcome: 'not_found' }
  const deps = {
    storage,
    crypto: createVaultCrypto(storage, input.keyring ?? null),
    hasKey: Boolean(input.keyring),
    plans: {},
    now: () => input.now,
    importTtlMs: 0,
    people: { findPersonByEmail: async () => null },
  }
  const actor = personActor(input)
  try {
    return { outcome: 'decided', import: await decidePush(deps, actor, { vaultId: imp.vaultId, importId: imp.id, decision: input.decision }) }
  } catch (err) {
    if (!(err instanceof DomainFailure)) throw err
    if (err.kind === 'not_found') return { outcome: 'not_found' }
    const now = (await storage.getImport(imp.id, input.now)) ?? imp
    if (err.kind === 'forbidden') return { outcome: 'forbidden', reason: err.reason, import: now }
    return { outcome: 'not_pending', import: now }
  }
}

import type { Keyring } from './adapters/keyring.js'
import type { ImportRecord, Storage } from './adapters/storage.js'
import { createEnvkeepCore, type EnvkeepCore } from './core.js'
import { personActor } from './domain/actor.js'
import { isRefusal } from './domain/failure.js'

export interface DecideImportInput {
  readonly importId: string
  readonly decision: 'applied' | 'rejected'
  /** the person deciding */
  readonly personId: string
  /** the moment of the decision; with a core, the core's clock decides instead */
  readonly now?: Date
  /** for the access log */
  readonly signInId?: string | null
  readonly clientId?: string | null
  readonly address?: string | null
  /**
   * The host's keyring (the one given to the plugin), when `decideImport` is
   * given a storage rather than the core. Applying a push keeps the values it
   * replaces in history, sealed, so it needs the key: without it, applying
   * throws a DomainFailure not_configured (503 on the API; rejecting does not).
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

/** The people a core for one decision asks nothing of (deciding a push finds nobody by email). */
const NO_PEOPLE = Object.freeze({ findPersonByEmail: async () => null })

/**
 * Decides a pending push, for a host's own pages: the domain layer's
 * `decidePush` (who may, the second-person rule, all values or none, the
 * log entry) with its refusals as outcomes. Pass the core the plugin was
 * given (createEnvkeepCore, option `core`); a bare storage still works and
 * gets a core of its own for this one decision (its own data-key cache).
 */
export async function decideImport(target: EnvkeepCore | Storage, input: DecideImportInput): Promise<DecideImportOutcome> {
  if (isCore(target)) return decideWith(target, input)
  const core = createEnvkeepCore({ storage: target, keyring: input.keyring ?? null, people: NO_PEOPLE, ...(input.now ? { now: fixed(input.now) } : {}) })
  try {
    return await decideWith(core, input)
  } finally {
    core.close()
  }
}

async function decideWith(core: EnvkeepCore, input: DecideImportInput): Promise<DecideImportOutcome> {
  const { domain } = core
  const vaultId = await domain.vaultOfPush(input.importId)
  if (!vaultId) return { outcome: 'not_found' }
  const actor = personActor(input)
  const push = { vaultId, importId: input.importId }
  try {
    return { outcome: 'decided', import: await domain.decidePush(actor, { ...push, decision: input.decision }) }
  } catch (err) {
    if (!isRefusal(err)) throw err
    if (err.kind === 'not_found') return { outcome: 'not_found' }
    // refused by who may decide or by its state: the person sees the push, as it is now
    const current = (await domain.loadPush(actor, push)).push
    if (err.kind === 'forbidden') return { outcome: 'forbidden', reason: err.reason, import: current }
    return { outcome: 'not_pending', import: current }
  }
}

function isCore(t: EnvkeepCore | Storage): t is EnvkeepCore {
  return 'domain' in t && 'crypto' in t
}

function fixed(at: Date): () => Date {
  return () => at
}

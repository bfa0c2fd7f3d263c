import { doneValue } from '../adapters/results.js'
import type { AuditRow, VaultInfo } from '../adapters/vault-store.js'
import { requireAdministrator, type AdministratorActor } from './actor.js'
import type { DomainDeps } from './deps.js'
import { pruneHistory } from './history.js'
import { AGAIN, retryOptimistic } from './retry.js'

/**
 * What only the server administrator does (`envkeep-server admin …`) and
 * the periodic work of the service (housekeeping): through the domain like
 * every other surface, so no command reaches storage on its own.
 */

/** The server-level audit log (deleted vaults: who, which, when), newest first. */
export async function listAudit(d: DomainDeps, actor: AdministratorActor, input: { limit: number }): Promise<AuditRow[]> {
  requireAdministrator(actor, 'read the audit log')
  return d.storage.listAudit({ limit: input.limit })
}

/** Every vault of the server, in id order (key rotations go through them one by one). */
export async function listAllVaults(d: DomainDeps, actor: AdministratorActor): Promise<VaultInfo[]> {
  requireAdministrator(actor, 'list every vault')
  return d.storage.findVaults({})
}

/** A new data key for one vault, every sealed value of it sealed again (see rotateDataKey); false when it has no key yet. */
export async function rotateVaultKey(d: DomainDeps, actor: AdministratorActor, vaultId: string): Promise<boolean> {
  requireAdministrator(actor, 'rotate data keys')
  return d.crypto.rotateDataKey(vaultId)
}

/**
 * One pass of a master-key rotation: every vault's wrapped data key passed
 * through `rewrap` and stored again if it changed (compare-and-set per
 * vault: a key made or rotated meanwhile is read and passed again; no lock
 * is held while the keyring wraps). Answers how many keys it saw and how
 * many it changed: a rotation repeats passes until one changes none.
 * A throw stops the pass; keys already stored stay rewrapped.
 */
export async function rewrapDataKeys(
  d: DomainDeps,
  actor: AdministratorActor,
  rewrap: (wrapped: Uint8Array, vaultId: string) => Promise<Uint8Array>,
): Promise<{ keys: number; rewrapped: number }> {
  requireAdministrator(actor, 'rewrap data keys')
  let keys = 0
  let rewrapped = 0
  for (const vault of await d.storage.findVaults({})) {
    const changed = await retryOptimistic(
      5,
      () => `the data key of vault ${vault.id} kept changing while it was rewrapped`,
      async (): Promise<boolean | null | typeof AGAIN> => {
        const wrapped = await d.storage.getWrappedKey(vault.id)
        if (!wrapped) return null
        const next = await rewrap(wrapped, vault.id)
        if (Buffer.from(next).equals(Buffer.from(wrapped))) return false
        const r = await d.storage.swapWrappedKey({ kind: 'key', vaultId: vault.id, expect: wrapped, next })
        if (r.ok) return true
        return r.reason === 'not_found' ? null : AGAIN
      },
    )
    if (changed === null) continue
    keys++
    if (changed) rewrapped++
  }
  return { keys, rewrapped }
}

/** Housekeeping: pending pushes past their end become `expired`; how many. */
export async function expirePushes(d: DomainDeps): Promise<number> {
  const r = await d.storage.expireImports(d.now())
  return r.ok ? r.value : 0
}

const DAY = 86_400_000

/** Finished webhook deliveries are kept this long (then the purge deletes them). */
export const KEEP_DELIVERIES_MS = 30 * DAY

/**
 * Housekeeping: OAuth codes expired a day ago (kept so a late replay still
 * revokes), expired access tokens and sign-ins ended more than 30 days ago,
 * used subject-token keys and rate counters past their end, and finished
 * webhook deliveries older than 30 days; how many rows went.
 */
export async function purgeSignIns(d: DomainDeps): Promise<number> {
  const now = d.now()
  const before = (ms: number) => new Date(now.getTime() - ms)
  const r = await d.storage.purgeExpired({ now, codesBefore: before(DAY), signInsBefore: before(30 * DAY), deliveriesBefore: before(KEEP_DELIVERIES_MS) })
  return doneValue(r)
}

/** Housekeeping: versions kept in history past `historyDays` (each variable's last 10 stay); how many went. */
export async function pruneOldHistory(d: DomainDeps): Promise<number> {
  return pruneHistory(d, d.historyDays ?? 365)
}

import type { AuditRow, VaultInfo } from '../adapters/vault-store.js'
import { requireAdministrator, type AdministratorActor } from './actor.js'
import type { DomainDeps } from './deps.js'
import { pruneHistory } from './history.js'

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
 * Every vault's wrapped data key passed through `rewrap` in one storage
 * transaction (a master-key rotation; values untouched); how many.
 */
export async function rewrapDataKeys(
  d: DomainDeps,
  actor: AdministratorActor,
  rewrap: (wrapped: Uint8Array, vaultId: string) => Promise<Uint8Array>,
): Promise<number> {
  requireAdministrator(actor, 'rewrap data keys')
  return d.storage.rewrapKeys(rewrap)
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
  return d.storage.purgeExpired({ now, codesBefore: before(DAY), signInsBefore: before(30 * DAY), deliveriesBefore: before(KEEP_DELIVERIES_MS) })
}

/** Housekeeping: versions kept in history past `historyDays` (each variable's last 10 stay); how many went. */
export async function pruneOldHistory(d: DomainDeps): Promise<number> {
  return pruneHistory(d, d.historyDays ?? 365)
}

import type { NewChangeSet } from './history-store.js'
import type { ChangeResult } from './results.js'
import type { AccessLogEntry, OverLimit, SealedVariable, StaleKey, StorageLimit } from './vault-store.js'

/**
 * The pushes half of the vault store (adapters/vault-store.ts): a .env file
 * sent from the command line waits as a pending push with its staged
 * (sealed) values until a person applies or rejects it, or it expires.
 * Same rules as every method of the vault store: one transaction per
 * change with its access-log entry, refusals as results, StorageError for
 * database failures.
 */

export type ImportStatus = 'pending' | 'applied' | 'rejected' | 'expired'

export interface RefusedLine {
  readonly line: number
  readonly name: string
  readonly reason: string
}

export interface ImportRecord {
  readonly id: string
  readonly vaultId: string
  readonly environment: string
  readonly senderId: string
  readonly signInId: string | null
  readonly status: ImportStatus
  readonly names: readonly string[]
  readonly overwrites: readonly string[]
  /**
   * Names the push deletes when applied (issue 25: a deletion proposed from the pages); they are
   * listed in `names` too, and have no staged value. Empty for a push from the command line.
   */
  readonly deletes: readonly string[]
  readonly refused: readonly RefusedLine[]
  readonly createdAt: Date
  readonly expiresAt: Date
  readonly decidedAt: Date | null
  readonly decidedBy: string | null
  /** why it was rejected, in the decider's words (never a value); null otherwise */
  readonly reason: string | null
}

export interface NewImport {
  readonly id: string
  readonly vaultId: string
  readonly environment: string
  readonly senderId: string
  readonly signInId: string | null
  readonly values: readonly SealedVariable[]
  /** names to delete when applied (no value staged; none of them among `values`) */
  readonly deletes?: readonly string[]
  readonly refused: readonly RefusedLine[]
  readonly createdAt: Date
  readonly expiresAt: Date
  readonly limit: StorageLimit
  /** as in VariableWrite: the wrapped data key the staged values were sealed under */
  readonly sealedUnder?: Uint8Array
}

/**
 * A push made or decided, and `webhooks`: whether its vault had a webhook then (read under the
 * vault's lock, as a webhook is added). Without one, the push's deliveries have nothing to
 * enqueue and the domain does not ask (a webhook added right after is found by the delivery
 * worker's sweep of recent events).
 */
export type PushDone = { readonly ok: true; readonly value: ImportRecord; readonly webhooks: boolean }

/** Done: the push as stored (`PushDone`). Refused: the key changed (`stale_key`) or the storage limit (OverLimit, with its figures). */
export type CreateImportResult = PushDone | Exclude<ChangeResult<StaleKey['reason'], ImportRecord>, { readonly ok: true }> | OverLimit

export interface ImportDecision {
  readonly importId: string
  readonly decision: 'applied' | 'rejected'
  readonly by: string
  readonly now: Date
  /** for `rejected`: the decider's reason, stored with the push */
  readonly reason?: string | null
  /**
   * For `applied`: the environment's version the change set was computed
   * at (HistoryStore.readCurrent); another version now → `changed`, nothing written.
   */
  readonly ifVersion?: number
  /** For `applied`: the change set of the values written, in the same transaction. */
  readonly changeSet?: NewChangeSet
}

/**
 * Done: the push as decided. Refused: `changed` (`ifVersion` was given and the
 * environment has another version now: nothing changed) or `not_pending`
 * (already decided, or expired now: nothing changed but the expiry; read it
 * again with getImport to see its state).
 */
/** Done: the push as decided (`PushDone`). Refused: the environment changed (`changed`) or the push is no longer pending. */
export type DecideImportResult = PushDone | Exclude<ChangeResult<'changed' | 'not_pending', ImportRecord>, { readonly ok: true }>

/** A push read with `values: true`: its staged sealed values too, in name order (empty once decided). */
export interface ImportWithValues extends ImportRecord {
  readonly values: readonly SealedVariable[]
}

export interface ImportReadOptions {
  /** the staged sealed values too */
  readonly values?: boolean
}

/** What getImport answers for its options: the push, with its staged values when asked. */
export type ImportRead<O> = O extends { readonly values: true } ? ImportWithValues : ImportRecord

export interface ImportStore {
  // ---- pushes (imports) ----------------------------------------------------------

  /**
   * Creates a pending push with its staged (sealed) values and appends `log`
   * (`push_created`), in one transaction, after checking `input.limit`
   * inside it (the staged values count). Computes `overwrites` (of the
   * staged values) from the environment's current variables; `names` (the
   * staged values' and `deletes`) and `deletes` are sorted. An existing id
   * throws 23505. Done, it says whether the vault had a webhook (`webhooks`).
   * Storage copies the sealed bytes it keeps: once this has answered (or
   * thrown), the caller frees them (domain/pushes.ts).
   */
  createImport(input: NewImport, log: AccessLogEntry): Promise<CreateImportResult>

  /**
   * A push by id, or null. If it is pending and `now >= expiresAt`, it is
   * first moved to `expired` (decidedAt = expiresAt, staged values deleted,
   * `push_expired` logged with `personId: null` and the push's names),
   * atomically. With `{ values: true }` the answer has its staged sealed
   * values too, read after that expiry (so none for a push that is not
   * pending): the review of a push reads both in one call.
   */
  getImport<O extends ImportReadOptions = ImportReadOptions>(importId: string, now: Date, options?: O): Promise<ImportRead<O> | null>

  /**
   * Decides a pending push and appends `log`, atomically: for `applied`,
   * every staged value is written to the environment's variables and every
   * name of `deletes` deleted from them (all or none; `updatedBy` = `decision.by`); then staged values are deleted and status, decidedAt and decidedBy set.
   * A push that is not pending, or has expired by `now`, is left unchanged
   * (the expiry is recorded as in getImport) → `not_pending`. Unknown push:
   * throws 23503.
   */
  decideImport(decision: ImportDecision, log: AccessLogEntry): Promise<DecideImportResult>

  /**
   * Moves every pending push with expiresAt <= now to expired, each with its
   * `push_expired` entry, atomically per push at least. Returns how many.
   * Safe to run from several processes at once: each push expires once.
   * Never refused.
   */
  expireImports(now: Date): Promise<ChangeResult<never, number>>

  /** Pushes of a vault, newest first (createdAt, then id), optionally by status. */
  listImports(vaultId: string, filter: { status?: ImportStatus; limit: number }): Promise<ImportRecord[]>
}

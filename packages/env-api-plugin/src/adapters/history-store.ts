import type { AccessLogEntry, OverLimit, SealedVariable, StaleKey, StorageLimit } from './vault-store.js'

/**
 * The history half of the storage contract (issue 12): every change of an
 * environment's values is one change set, written in the same transaction
 * as the change. Storage keeps the rows; the domain (domain/history.ts)
 * knows what they mean.
 *
 * The sealed values of a change set are NOT the variables' own bytes: the
 * domain seals each one again with additional data binding vault,
 * environment, name, change set and side (`historyPlaceOf`), so no stored
 * version can be moved to another row or another version. Storage copies
 * bytes; it never makes or opens one.
 */

/** How a change came about. */
export type ChangeHow = 'push' | 'page' | 'admin' | 'revert' | 'restore'

export type ChangeKind = 'added' | 'changed' | 'deleted'

/** One variable of a change set: its value before and after, sealed for this row. */
export interface ChangeEntry {
  readonly name: string
  readonly kind: ChangeKind
  /** null for `added` */
  readonly before: Uint8Array | null
  /** null for `deleted` */
  readonly after: Uint8Array | null
}

export interface NewChangeSet {
  /** made by the domain (a UUID): part of every entry's additional data */
  readonly id: string
  readonly vaultId: string
  readonly environment: string
  readonly at: Date
  /** the person; null for the server administrator */
  readonly by: string | null
  readonly how: ChangeHow
  /** the push applied (`push`), the change set reverted or restored to (`revert`, `restore`); else null */
  readonly ref: string | null
  readonly entries: readonly ChangeEntry[]
}

export interface ChangeSetSummary {
  readonly id: string
  /** storage's order of change sets: larger is later (across a vault's environments) */
  readonly seq: number
  readonly vaultId: string
  readonly environment: string
  readonly at: Date
  readonly by: string | null
  readonly how: ChangeHow
  readonly ref: string | null
  /** names, in name order, of the entries still kept (retention may have pruned some) */
  readonly added: readonly string[]
  readonly changed: readonly string[]
  readonly deleted: readonly string[]
}

export interface ChangeSetDetail extends ChangeSetSummary {
  /** in name order */
  readonly entries: readonly ChangeEntry[]
}

/** One version of a variable: the entry of a change set that touched it. */
export interface VariableVersion {
  readonly changeSet: ChangeSetSummary
  readonly entry: ChangeEntry
}

/**
 * Values written to one environment as one change set. The domain computed
 * the change from the environment as it was at `ifVersion` (the version
 * `readCurrent` answered); storage refuses it (`changed`) if the
 * environment's version is another one now, and the domain computes again.
 */
export interface VariablesChange {
  readonly vaultId: string
  readonly environment: string
  /** values to write (sealed as variables: `placeOf`) */
  readonly set: readonly SealedVariable[]
  /** names to delete; each must have a value at `ifVersion` */
  readonly delete: readonly string[]
  readonly ifVersion: number
  readonly by: string | null
  readonly now: Date
  readonly limit: StorageLimit
  /** as in VariableWrite: the wrapped data key the values were sealed under */
  readonly sealedUnder?: Uint8Array
  /** written in the same transaction; its `at` is `now` */
  readonly changeSet: NewChangeSet
}

/** The environment changed since `ifVersion`: nothing was written. */
export interface Changed {
  readonly ok: false
  readonly reason: 'changed'
}

export type ChangeVariablesResult = { readonly ok: true; readonly version: number } | Changed | OverLimit | StaleKey

export interface HistoryStore {
  /**
   * Sealed values of an environment (all of them, or only `names`), with
   * its current version, read together. Not logged: for computing a change
   * (the `before` of its entries), never for delivering a value. An unknown
   * environment answers version 0 and no values.
   */
  readCurrent(vaultId: string, environment: string, names?: readonly string[]): Promise<{ version: number; variables: SealedVariable[] }>

  /**
   * Writes `set` and deletes `delete`, the change set and `log`, in one
   * transaction, after checking inside it `ifVersion`, `sealedUnder` and
   * the storage limit (StorageLimit: history never counts). The
   * environment's version changes. A refusal writes nothing.
   */
  changeVariables(change: VariablesChange, log: AccessLogEntry): Promise<ChangeVariablesResult>

  /**
   * Change sets of a vault, newest first (by seq): of one environment, or
   * the ones whose `ref` is given; `beforeSeq` is a cursor.
   */
  listChangeSets(vaultId: string, filter: { environment?: string; ref?: string; limit: number; beforeSeq?: number }): Promise<ChangeSetSummary[]>

  /** One change set of the vault with its entries, or null. */
  getChangeSet(vaultId: string, changeSetId: string): Promise<ChangeSetDetail | null>

  /** The versions of one variable, newest first (change sets that touched it and still keep its entry). */
  listVersions(vaultId: string, environment: string, name: string, filter: { limit: number }): Promise<VariableVersion[]>

  /**
   * For each name touched by a change set later than `afterSeq` in the
   * environment: its FIRST such entry (so `before` is the value it had
   * right after `afterSeq`), with that change set's id. In name order.
   */
  firstChangesAfter(vaultId: string, environment: string, afterSeq: number): Promise<{ name: string; changeSetId: string; entry: ChangeEntry }[]>

  /**
   * Retention: deletes the entries of change sets made before `olderThan`,
   * except each variable's `keep` newest entries; then change sets left
   * with no entry. Returns how many entries went. Safe from several
   * processes at once.
   */
  pruneHistory(olderThan: Date, keep: number): Promise<number>
}

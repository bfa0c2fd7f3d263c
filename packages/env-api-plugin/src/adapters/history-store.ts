import type { ChangeResult } from './results.js'
import type { AccessLogEntry, OverLimit, SealedVariable, StaleKey, StorageLimit, VariableMeta } from './vault-store.js'

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

/**
 * Done: the environment's new version. Refused: `changed` (the environment
 * changed since `ifVersion`), `stale_key`, or the storage limit (OverLimit,
 * with its figures); a refusal writes nothing.
 */
export type ChangeVariablesResult = ChangeResult<'changed' | StaleKey['reason'], number> | OverLimit

/** What readCurrent reads: values (the default) or only names and metadata; all names, or only `names`. */
export interface CurrentOptions {
  /** only these names (those the environment has) */
  readonly names?: readonly string[]
  /** `false`: no value, each variable's name, updatedAt and updatedBy instead */
  readonly values?: boolean
}

/** What readCurrent answers for its options. */
export interface CurrentState<O extends CurrentOptions = CurrentOptions> {
  readonly version: number
  /** in name order */
  readonly variables: O extends { readonly values: false } ? VariableMeta[] : SealedVariable[]
}

/**
 * Which change sets listChangeSets answers: all of a vault's, narrowed by
 * each field given. `limit` absent: all of them.
 */
export interface ChangeSetFilter {
  readonly environment?: string
  /** the change sets whose `ref` is this (a push applied, a change set reverted or restored to) */
  readonly ref?: string
  /** one change set by id */
  readonly id?: string
  /** the change sets that touched this variable and still keep its entry (its versions) */
  readonly name?: string
  /** a cursor: only older ones (seq below) */
  readonly beforeSeq?: number
  /** only later ones (seq above): what changed since a change set */
  readonly afterSeq?: number
  /** with their entries (all of them; only the `name` one when `name` is given) */
  readonly entries?: boolean
  readonly limit?: number
}

/** What listChangeSets answers for its filter: summaries, or change sets with their entries. */
export type ChangeSetList<F extends ChangeSetFilter> = F extends { readonly entries: true } ? ChangeSetDetail[] : ChangeSetSummary[]

export interface HistoryStore {
  /**
   * Sealed values of an environment (all of them, or only `names`), with
   * its current version, read together (one statement where the backend
   * can). Not logged: the domain appends the entry of a read after it
   * (appendAccessLog); for computing a change it is the `before`. An unknown
   * environment answers version 0 and no values. With `values: false`, names
   * and metadata instead of values (what listing an environment needs).
   * This is the hot path's first half: no write, no lock.
   */
  readCurrent<O extends CurrentOptions = CurrentOptions>(vaultId: string, environment: string, options?: O): Promise<CurrentState<O>>

  /**
   * Writes `set` and deletes `delete`, the change set and `log`, in one
   * transaction, after checking inside it `ifVersion`, `sealedUnder` and
   * the storage limit (StorageLimit: history never counts). The
   * environment's version changes. A refusal writes nothing.
   */
  changeVariables(change: VariablesChange, log: AccessLogEntry): Promise<ChangeVariablesResult>

  /**
   * Change sets of a vault, newest first (by seq), narrowed by `filter`
   * (ChangeSetFilter). One method for every read of history: a change set
   * by `id` with its `entries` (it was getChangeSet), a variable's versions
   * by `name` with `entries` (listVersions), and what changed after a change
   * set by `afterSeq` with `entries` (firstChangesAfter: the first entry of
   * each name after it is a pure function of this list, domain/history.ts;
   * storage only filters and orders, so no backend writes that rule).
   */
  listChangeSets<F extends ChangeSetFilter>(vaultId: string, filter: F): Promise<ChangeSetList<F>>

  /**
   * Retention: deletes the entries of change sets made before `olderThan`,
   * except each variable's `keep` newest entries; then change sets left
   * with no entry. Returns how many entries went. Safe from several
   * processes at once. Never refused.
   */
  pruneHistory(olderThan: Date, keep: number): Promise<ChangeResult<never, number>>
}

/**
 * The vault half of the storage contract: vaults, memberships, environments,
 * sealed variables, pushes (imports) and the access log. How to implement a
 * backend, step by step: docs/storage-contract.md. The contract suite every
 * backend must pass: `runVaultStoreContract` in `@envkeep/env-api-plugin/testing`;
 * the reference implementation: `createMemoryStorage()` from the same export.
 *
 * Rules for every method:
 * - all async; something absent is `null` (or `[]`), never a thrown NotFound;
 * - inputs are plain data (ids, names, Dates, bytes); adapters never see a request;
 * - storage knows no rule of the service except the few it must check inside
 *   its own transaction, which are passed in as data (the plan's `limit`) or
 *   are invariants of the data (a vault keeps at least one owner). An
 *   expected refusal is a result (`{ ok: false, reason }`), never a throw;
 * - every change is one method and one transaction, and takes its access-log
 *   entry the same way: `(input, log)`. The entry is written in the same
 *   transaction as the change, or nothing is written; a change that is
 *   refused or does nothing writes no entry;
 * - database failures are thrown as `StorageError` (../errors.ts) carrying the
 *   spec's SQLSTATE vocabulary (23505 duplicate, 23503 missing parent, …);
 *   nothing above storage knows SQL;
 * - values only ever cross this interface sealed (`Uint8Array`), never plain.
 */

import type { AccessAction } from '../domain/access-log-actions.js'
import type { ChangeResult } from './results.js'

export type * from './results.js'

export type Role = 'owner' | 'editor' | 'viewer'

export interface EnvironmentInfo {
  readonly name: string
  readonly ownersOnly: boolean
  /**
   * "Require a second person": the sender of a push may not decide it here.
   * Storage always answers it; given at creation it defaults to `ownersOnly`.
   */
  readonly secondPerson?: boolean
}

export interface VaultRecord {
  readonly id: string
  readonly name: string
  /** plan name, a key of the plan table (`self-hosted` by default) */
  readonly plan: string
  /** when true, the sender of a push may not decide it */
  readonly requireSecondPerson: boolean
  readonly createdAt: Date
}

/** A vault with its environments, as the server administrator sees it (no role). */
export interface VaultInfo extends VaultRecord {
  /** every environment of the vault, in name order */
  readonly environments: readonly EnvironmentInfo[]
}

/** A vault as one person sees it. */
export interface VaultAccess extends VaultInfo {
  readonly role: Role
}

export interface SealedVariable {
  readonly name: string
  /** nonce ‖ ciphertext ‖ tag, as produced by crypto/seal.ts */
  readonly sealed: Uint8Array
}

/** A variable without its value (`readCurrent` with `values: false`). */
export interface VariableMeta {
  readonly name: string
  readonly updatedAt: Date
  /** the person who wrote it last; `null` for the server administrator */
  readonly updatedBy: string | null
}

export type { AccessAction } from '../domain/access-log-actions.js'

/**
 * One entry of a vault's access log. Who: a person (`personId`, with the
 * sign-in, client and address they used), or the server administrator
 * (`personId: null`, `clientId: 'envkeep-server'`), or nobody (`push_expired`).
 */
export interface AccessLogEntry {
  readonly vaultId: string
  readonly at: Date
  readonly personId: string | null
  readonly signInId: string | null
  readonly clientId: string | null
  readonly action: AccessAction
  readonly environment: string | null
  /** variable names only, never values */
  readonly names: readonly string[]
  readonly address: string | null
  /** whom the change concerns: the member's person id for member_* actions; else null */
  readonly subject: string | null
  /** what it became, in a word: the role for member_added/member_changed; else null */
  readonly detail: string | null
}

export interface AccessLogRow extends AccessLogEntry {
  readonly id: number
}

/**
 * The plan's storage limit of a vault, checked by storage inside the
 * transaction of every change that stores a value. A vault's usage is its
 * variables plus the staged values of its pending pushes, counted and sized
 * (bytes of sealed values) together. A change is refused when, with it, a
 * figure would be over its maximum AND larger than before the change (so a
 * vault over a limit that shrank can still shrink).
 *
 * Applying a push takes no limit: its staged values were counted when it
 * was created, and moving them into the environment never grows usage.
 */
export interface StorageLimit {
  /** most variables per vault, staged values of pending pushes included */
  readonly maxVariables: number
  /** most bytes of sealed values per vault, staged values of pending pushes included */
  readonly maxBytes: number
}

/** A change refused by the storage limit; nothing was written. */
export interface OverLimit {
  readonly ok: false
  readonly reason: 'storage_limit'
  readonly limit: 'variables' | 'bytes'
  /** what the vault would hold with the change (count or bytes): the figure over `max` */
  readonly usage: number
  readonly max: number
}

export interface NewVault {
  readonly id: string
  readonly name: string
  readonly ownerId: string
  readonly plan: string
  readonly environments: readonly EnvironmentInfo[]
  readonly now: Date
}

/**
 * A change of a vault (`changeVault`): its name, an environment's rules
 * (`ownersOnly`, `secondPerson`; an absent one is kept), or a new
 * environment (`secondPerson` defaults to `ownersOnly`).
 */
export type VaultChange =
  | { readonly kind: 'rename'; readonly vaultId: string; readonly name: string }
  | {
      readonly kind: 'environment_rules'
      readonly vaultId: string
      readonly environment: string
      readonly ownersOnly?: boolean
      readonly secondPerson?: boolean
    }
  | {
      readonly kind: 'create_environment'
      readonly vaultId: string
      readonly name: string
      readonly ownersOnly: boolean
      readonly secondPerson?: boolean
      readonly now: Date
    }

/** A server-level audit line: what happened to a vault that has no access log any more. */
export interface AuditRow {
  readonly id: number
  readonly at: Date
  /** who did it; null for the server administrator */
  readonly personId: string | null
  readonly action: 'vault_deleted'
  readonly vaultId: string
  readonly vaultName: string
}

/**
 * A change of a vault's members (`changeMember`). `set` adds a member or
 * changes their role; its `expect`: `new` refuses (`already_member`) if the
 * person is a member, `existing` refuses (`not_member`) if not, `any`
 * (default) adds or changes. `remove` takes the person out.
 */
export type MemberChange =
  | { readonly kind: 'set'; readonly vaultId: string; readonly personId: string; readonly role: Role; readonly expect?: 'new' | 'existing' | 'any' }
  | { readonly kind: 'remove'; readonly vaultId: string; readonly personId: string }

/**
 * What a member change answers: done, with the role the person had before
 * (null: was not a member); or refused: `last_owner` (the vault would have
 * no owner), `already_member`/`not_member` (`expect`, or removing a
 * non-member), `not_found` (no such vault, for `set`).
 */
export type MemberChangeResult = ChangeResult<'last_owner' | 'already_member' | 'not_member' | 'not_found', Role | null>

/** The vault's data key changed since the values were sealed: nothing was written. */
export interface StaleKey {
  readonly ok: false
  readonly reason: 'stale_key'
}

/** Every secret of a vault: its wrapped data key and every sealed value (variables and staged values of pending pushes). */
export interface VaultSecrets {
  /** the data key all of them are sealed under, wrapped by the keyring */
  readonly wrappedKey: Uint8Array
  readonly variables: readonly { readonly environment: string; readonly name: string; readonly sealed: Uint8Array }[]
  readonly staged: readonly { readonly importId: string; readonly environment: string; readonly name: string; readonly sealed: Uint8Array }[]
  /** every kept version (history-store.ts): one row per side of an entry that has a value */
  readonly history: readonly {
    readonly changeSetId: string
    readonly environment: string
    readonly name: string
    readonly side: 'before' | 'after'
    readonly sealed: Uint8Array
  }[]
  /**
   * every webhook signing secret of the vault (webhook-store.ts), sealed with
   * `webhookPlaceOf`; written back when the answer has it
   */
  readonly webhooks?: readonly { readonly webhookId: string; readonly sealed: Uint8Array }[]
  /** every personal override of the vault (override-store.ts), sealed with `overridePlaceOf`; written back when the answer has it */
  readonly overrides?: readonly { readonly environment: string; readonly name: string; readonly personId: string; readonly sealed: Uint8Array }[]
}

/**
 * A compare-and-set of a vault's data key (`swapWrappedKey`). `key`: the
 * wrapped key alone is replaced (the first key, `expect: null`; a master-key
 * rotation rewrapping it). `reseal`: the key and every sealed value with it
 * (a data-key rotation): `expect` is the vault's secrets as read
 * (`readVaultSecrets`), `next` the same rows sealed anew.
 */
export type KeySwap =
  | { readonly kind: 'key'; readonly vaultId: string; readonly expect: Uint8Array | null; readonly next: Uint8Array }
  | { readonly kind: 'reseal'; readonly vaultId: string; readonly expect: VaultSecrets; readonly next: VaultSecrets }

export interface VaultStore {
  // ---- vaults and keys --------------------------------------------------------

  /**
   * Creates a vault with its owner and environments and appends `log`
   * (`vault_created`), in one transaction; its value: the new vault. Never
   * refused: an existing id throws 23505 and changes nothing (ids are made
   * by the domain, a clash is a bug).
   */
  createVault(input: NewVault, log: AccessLogEntry): Promise<ChangeResult<never, VaultRecord>>

  /** The wrapped data key of a vault, or `null` when none was made yet (or no such vault). */
  getWrappedKey(vaultId: string): Promise<Uint8Array | null>

  /**
   * Every secret of a vault (its wrapped data key and every sealed value),
   * as one consistent read; `null` for an unknown vault or one without a key.
   */
  readVaultSecrets(vaultId: string): Promise<VaultSecrets | null>

  /**
   * Replaces a vault's data key if it is still what the caller read, in one
   * transaction; no lock is held while the caller wraps or seals (it does
   * that before, and calls again after `changed`). `key`: refused with
   * `changed` when the stored key is not `expect` (null: none). `reseal`:
   * refused with `changed` when the vault's secrets are not exactly
   * `expect` (a value written, a push created, the key swapped meanwhile);
   * else writes every row of `next` (the same rows as `expect`, new sealed
   * bytes; a row that is not there throws 23503 and changes nothing), and
   * every environment's version changes. `not_found`: no such vault.
   */
  swapWrappedKey(swap: KeySwap): Promise<ChangeResult<'changed' | 'not_found'>>

  /**
   * The vaults the person is a member of, in name order (then id), with
   * their role and environments; with `vaultId`, only that one (`[]` when
   * absent or the person is not a member: one indexed look-up, the API's
   * every request starts here).
   */
  listVaults(personId: string, filter?: { readonly vaultId?: string }): Promise<VaultAccess[]>

  /**
   * Every vault with that id or exact name (or every vault, for `{}`),
   * whoever its members (for the server administrator's commands), in id
   * order; `[]` when none.
   */
  findVaults(filter: { readonly id: string } | { readonly name: string } | Record<string, never>): Promise<VaultInfo[]>

  /**
   * Changes a vault (see VaultChange) and appends `log` (`vault_renamed`
   * with the new name as detail, `environment_changed`,
   * `environment_created`), in one transaction. `not_found`: no such vault
   * (or environment, for its rules); `exists`: a new environment's name
   * the vault has already. A refusal writes nothing.
   */
  changeVault(change: VaultChange, log: AccessLogEntry): Promise<ChangeResult<'not_found' | 'exists'>>

  /**
   * Deletes a vault with everything it holds (members, environments,
   * values, pushes, history, CI identities, its access log) and appends one
   * server-level audit row, in one transaction. `not_found` for an unknown
   * vault (nothing written).
   */
  deleteVault(input: { readonly vaultId: string; readonly by: string | null; readonly at: Date }): Promise<ChangeResult<'not_found'>>

  /** Server-level audit rows, newest first. */
  listAudit(filter: { readonly limit: number }): Promise<AuditRow[]>

  // ---- members ----------------------------------------------------------------

  /**
   * Changes a vault's members (see MemberChange) and appends `log`, in one
   * transaction. The entry of a `set` is written as `member_added` when the
   * person was not a member and `member_changed` otherwise, whatever
   * `log.action` says (`memberChangeEntry`); setting the role a member has
   * already writes nothing and logs nothing. Invariant checked inside the
   * transaction: a change that would leave the vault without an owner is
   * refused (`last_owner`).
   */
  changeMember(change: MemberChange, log: AccessLogEntry): Promise<MemberChangeResult>

  /** Every member of a vault, in person-id order; `[]` for an unknown vault. */
  listMembers(vaultId: string): Promise<{ personId: string; role: Role }[]>

  // ---- access log --------------------------------------------------------------

  /**
   * Appends one entry that goes with no change (a read, a refusal, a read of
   * staged values). It is the second half of the hot path (`readCurrent`,
   * then this): the answer waits until the entry is durable, and a backend
   * may commit the entries of concurrent reads together (SQLite does: one
   * commit, one sync). Never refused: a failure of the database throws.
   */
  appendAccessLog(entry: AccessLogEntry): Promise<ChangeResult<never>>

  /** Newest first (by id); `before` is an id cursor. */
  listAccessLog(vaultId: string, filter: { environment?: string; action?: AccessAction; limit: number; before?: number }): Promise<AccessLogRow[]>
}

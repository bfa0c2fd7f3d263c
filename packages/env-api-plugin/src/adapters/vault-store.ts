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
import type { ImportStore } from './import-store.js'
import type { ChangeResult } from './results.js'

export type * from './import-store.js'
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

export interface NewEnvironment {
  readonly vaultId: string
  readonly name: string
  readonly ownersOnly: boolean
  /** default: `ownersOnly` */
  readonly secondPerson?: boolean
  readonly now: Date
}

export type CreateEnvironmentResult = { readonly ok: true } | { readonly ok: false; readonly reason: 'exists' }

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

export interface MemberChange {
  readonly vaultId: string
  readonly personId: string
  readonly role: Role
  /**
   * `new`: refuse (`already_member`) if the person is a member; `existing`:
   * refuse (`not_member`) if not; `any` (default): add or change.
   */
  readonly expect?: 'new' | 'existing' | 'any'
}

export type SetMemberResult =
  /** `previous` is the role before (null: was not a member); same role → nothing written or logged */
  | { readonly ok: true; readonly previous: Role | null }
  /** the change would leave the vault without an owner */
  | { readonly ok: false; readonly reason: 'last_owner' | 'already_member' | 'not_member' }

export type RemoveMemberResult = { readonly ok: true; readonly previous: Role } | { readonly ok: false; readonly reason: 'last_owner' | 'not_member' }

/** The vault's data key changed since the values were sealed: nothing was written. */
export interface StaleKey {
  readonly ok: false
  readonly reason: 'stale_key'
}

/** Every secret of a vault: its wrapped data key and every sealed value (variables and staged values of pending pushes). */
export interface VaultSecrets {
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

export interface VaultStore extends ImportStore {
  // ---- vaults and keys --------------------------------------------------------

  /**
   * Creates a vault with its owner and environments and appends `log`
   * (`vault_created`), in one transaction. An existing id throws 23505 and
   * changes nothing.
   */
  createVault(input: NewVault, log: AccessLogEntry): Promise<VaultRecord>

  /** The wrapped data key of a vault, or `null` when none was made yet (or no such vault). */
  getWrappedKey(vaultId: string): Promise<Uint8Array | null>

  /**
   * The vault's wrapped data key, made if it has none: in one write
   * transaction, if the vault has no key, calls `wrap()` (which wraps a new
   * data key under the current master key) and stores its result. `wrap`
   * runs inside the transaction, holding the write lock, so a master-key
   * rotation (`rewrapKeys`) can never commit between the wrapping and the
   * storing: a key is wrapped either before the rotation (and rewrapped by
   * it) or after it (under the new key). `wrap` is not called when the
   * vault has a key already (another writer won); that key is returned. A
   * throw from `wrap` stores nothing. No such vault: throws 23503.
   */
  ensureWrappedKey(vaultId: string, wrap: () => Promise<Uint8Array>): Promise<Uint8Array>

  /**
   * Replaces the wrapped data keys of all vaults (master key rotation), in
   * one transaction that holds the store's write lock across the awaited
   * `rewrap` calls, so no key can be stored meanwhile. A throw rolls every
   * key back. Returns how many keys were rewrapped.
   */
  rewrapKeys(rewrap: (wrapped: Uint8Array, vaultId: string) => Promise<Uint8Array>): Promise<number>

  /**
   * Replaces a vault's data key (data-key rotation), in one transaction that
   * holds the write lock across the awaited `reseal`: reads the vault's
   * secrets, calls `reseal` with them, and writes what it returns (the same
   * rows, each with new sealed bytes, and the new wrapped key); a throw
   * changes nothing. Every environment's version changes. Returns false
   * (and does not call `reseal`) for an unknown vault or one without a key.
   */
  resealVault(vaultId: string, reseal: (current: VaultSecrets) => Promise<VaultSecrets>): Promise<boolean>

  /** Vaults the person is a member of, in name order (then id), with their role and environments. */
  listVaults(personId: string): Promise<VaultAccess[]>

  /** One vault as the person sees it; `null` when absent or the person is not a member. */
  getVault(vaultId: string, personId: string): Promise<VaultAccess | null>

  /**
   * Every vault with that id or exact name (or every vault, for `{}`),
   * whoever its members (for the server administrator's commands), in id
   * order; `[]` when none.
   */
  findVaults(filter: { readonly id: string } | { readonly name: string } | Record<string, never>): Promise<VaultInfo[]>

  /**
   * Renames a vault and appends `log` (`vault_renamed`, detail: the new
   * name), in one transaction. False for an unknown vault.
   */
  renameVault(input: { readonly vaultId: string; readonly name: string }, log: AccessLogEntry): Promise<boolean>

  /**
   * Deletes a vault with everything it holds (members, environments,
   * values, pushes, history, CI identities, its access log) and appends one
   * server-level audit row, in one transaction. False for an unknown vault
   * (nothing written).
   */
  deleteVault(input: { readonly vaultId: string; readonly by: string | null; readonly at: Date }): Promise<boolean>

  /** Server-level audit rows, newest first. */
  listAudit(filter: { readonly limit: number }): Promise<AuditRow[]>

  // ---- environments and members ------------------------------------------------

  /**
   * Changes an environment's rules (`ownersOnly`, `secondPerson`; an absent
   * one is kept) and appends `log` (`environment_changed`), in one
   * transaction. False for an unknown environment (nothing written).
   */
  setEnvironmentRules(
    input: { readonly vaultId: string; readonly name: string; readonly ownersOnly?: boolean; readonly secondPerson?: boolean },
    log: AccessLogEntry,
  ): Promise<boolean>

  /**
   * Adds an environment and appends `log` (`environment_created`), in one
   * transaction. A name the vault has already: `{ ok: false, reason: 'exists' }`.
   * No such vault: throws 23503.
   */
  createEnvironment(input: NewEnvironment, log: AccessLogEntry): Promise<CreateEnvironmentResult>

  /**
   * Adds a member or changes their role, and appends `log`, in one
   * transaction. Storage writes the entry's `action` as `member_added` when
   * the person was not a member and `member_changed` otherwise (whatever
   * `log.action` says). Invariant checked inside the transaction: a change
   * that would leave the vault without an owner is refused (`last_owner`).
   * Setting the role a member has already writes nothing and logs nothing.
   * No such vault: throws 23503.
   */
  setMember(change: MemberChange, log: AccessLogEntry): Promise<SetMemberResult>

  /**
   * Removes a member and appends `log` (`member_removed`), in one
   * transaction; refused with `last_owner` when they are the vault's only owner.
   */
  removeMember(input: { readonly vaultId: string; readonly personId: string }, log: AccessLogEntry): Promise<RemoveMemberResult>

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

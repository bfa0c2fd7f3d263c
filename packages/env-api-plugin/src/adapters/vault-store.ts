/**
 * The vault half of the storage contract: vaults, memberships, environments,
 * sealed variables, pushes (imports) and the access log.
 *
 * Rules for every method (see docs/storage-contract.md and the contract suite
 * in `src/testing/`):
 * - all async; something absent is `null` (or `[]`), never a thrown NotFound;
 * - inputs are plain data (ids, names, Dates, bytes); adapters never see a request;
 * - what must be atomic is one method, and its TSDoc says so;
 * - database failures are thrown as `StorageError` (../errors.ts) carrying the
 *   spec's SQLSTATE vocabulary; nothing above storage knows SQL;
 * - values only ever cross this interface sealed (`Uint8Array`), never plain.
 */

export type Role = 'owner' | 'editor' | 'viewer'

export interface EnvironmentInfo {
  readonly name: string
  readonly ownersOnly: boolean
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

/** A vault as one person sees it. */
export interface VaultAccess extends VaultRecord {
  readonly role: Role
  /** every environment of the vault, in name order (readability is decided above storage) */
  readonly environments: readonly EnvironmentInfo[]
}

export interface SealedVariable {
  readonly name: string
  /** nonce ‖ ciphertext ‖ tag, as produced by crypto/seal.ts */
  readonly sealed: Uint8Array
}

export interface VariableMeta {
  readonly name: string
  readonly updatedAt: Date
  readonly updatedBy: string | null
}

export type AccessAction =
  | 'read'
  | 'refused'
  | 'push_created'
  | 'push_applied'
  | 'push_rejected'
  | 'push_expired'
  | 'variable_set'
  | 'variable_deleted'
  | 'member_added'
  | 'member_changed'
  | 'member_removed'
  | 'environment_created'

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
}

export interface AccessLogRow extends AccessLogEntry {
  readonly id: number
}

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
  readonly refused: readonly RefusedLine[]
  readonly createdAt: Date
  readonly expiresAt: Date
  readonly decidedAt: Date | null
  readonly decidedBy: string | null
}

export interface NewImport {
  readonly id: string
  readonly vaultId: string
  readonly environment: string
  readonly senderId: string
  readonly signInId: string | null
  readonly values: readonly SealedVariable[]
  readonly refused: readonly RefusedLine[]
  readonly createdAt: Date
  readonly expiresAt: Date
}

export interface StorageLimit {
  /** most variables per vault, staged values of pending pushes included */
  readonly maxVariables: number
  /** most bytes of sealed values per vault, staged values of pending pushes included */
  readonly maxBytes: number
}

export type CreateImportResult =
  | { readonly ok: true; readonly import: ImportRecord }
  | {
      readonly ok: false
      readonly limit: 'variables' | 'bytes'
      /** what the vault would hold with this push included (count or bytes): the figure over `max` */
      readonly usage: number
      readonly max: number
    }

export type DecideImportResult =
  | { readonly ok: true; readonly import: ImportRecord }
  /** the push was not pending (already decided, or expired now): nothing changed */
  | { readonly ok: false; readonly import: ImportRecord }

export interface VaultStore {
  /**
   * Creates a vault with its owner and the given environments, in one transaction.
   */
  createVault(input: {
    id: string
    name: string
    ownerId: string
    plan: string
    environments: readonly EnvironmentInfo[]
    now: Date
  }): Promise<VaultRecord>

  /** The wrapped data key of a vault, or `null` when none was made yet (or no such vault). */
  getWrappedKey(vaultId: string): Promise<Uint8Array | null>

  /**
   * Stores `wrapped` as the vault's data key only if it has none; atomic.
   * Returns the key that is stored afterwards (the existing one if another writer won).
   */
  ensureWrappedKey(vaultId: string, wrapped: Uint8Array): Promise<Uint8Array>

  /** Replaces the wrapped data keys of all vaults (master key rotation), in one transaction. */
  rewrapKeys(rewrap: (wrapped: Uint8Array, vaultId: string) => Promise<Uint8Array>): Promise<number>

  /** Vaults the person is a member of, in name order, with their role and environments. */
  listVaults(personId: string): Promise<VaultAccess[]>

  /** One vault as the person sees it; `null` when absent or the person is not a member. */
  getVault(vaultId: string, personId: string): Promise<VaultAccess | null>

  /** Finds vaults by exact name among those the person is a member of. */
  findVaultsByName(name: string, personId: string): Promise<VaultAccess[]>

  createEnvironment(vaultId: string, env: EnvironmentInfo, now: Date): Promise<void>

  setMember(vaultId: string, personId: string, role: Role): Promise<void>
  removeMember(vaultId: string, personId: string): Promise<boolean>
  listMembers(vaultId: string): Promise<{ personId: string; role: Role }[]>

  /**
   * Reads every sealed variable of an environment in name order AND appends
   * `log` to the access log, in one transaction: if the entry cannot be
   * written, nothing is returned (the error is thrown).
   * The entry is written with `names` set to the names of the variables read
   * (whatever `log.names` holds is replaced), so the log says exactly what left.
   * `version` changes whenever a variable of the environment changes.
   */
  readVariables(
    vaultId: string,
    environment: string,
    log: AccessLogEntry,
  ): Promise<{ variables: SealedVariable[]; version: number }>

  /** Names and metadata of the variables of an environment (no values), in name order. */
  listVariableNames(vaultId: string, environment: string): Promise<VariableMeta[]>

  /** One sealed value, or null. Does not log (callers log `read` themselves). */
  getVariable(vaultId: string, environment: string, name: string): Promise<SealedVariable | null>

  /** Writes (insert or replace) one variable and appends `log`, in one transaction. */
  setVariable(
    vaultId: string,
    environment: string,
    value: SealedVariable,
    by: string,
    now: Date,
    log: AccessLogEntry,
  ): Promise<void>

  /** Deletes one variable and appends `log`, in one transaction. Returns false if absent. */
  deleteVariable(vaultId: string, environment: string, name: string, log: AccessLogEntry): Promise<boolean>

  /** Appends one entry to the access log. */
  appendAccessLog(entry: AccessLogEntry): Promise<void>

  /** Newest first. */
  listAccessLog(
    vaultId: string,
    filter: { environment?: string; action?: AccessAction; limit: number; before?: number },
  ): Promise<AccessLogRow[]>

  /**
   * Creates a pending push with its staged (sealed) values and appends a
   * `push_created` log entry, in one transaction. Computes `overwrites` from
   * the environment's current variables. Checks `limit` against the vault's
   * usage (variables + staged values of pending pushes, counted and sized
   * together with the new push) inside the same transaction.
   */
  createImport(input: NewImport, limit: StorageLimit, log: AccessLogEntry): Promise<CreateImportResult>

  /**
   * A push by id, or null. If it is pending and `now >= expiresAt`, it is
   * first moved to `expired` (decidedAt = expiresAt, staged values deleted,
   * `push_expired` logged), atomically.
   */
  getImport(importId: string, now: Date): Promise<ImportRecord | null>

  /** The staged sealed values of a pending push (empty once decided). */
  getImportValues(importId: string): Promise<SealedVariable[]>

  /**
   * Decides a pending push, atomically: for `applied`, every staged value is
   * written to the environment's variables (all or none), then staged values
   * are deleted, status, decidedAt and decidedBy set, and `log` appended.
   * A push that is not pending, or has expired by `now`, is left unchanged
   * (expired is recorded) and returned with ok: false.
   */
  decideImport(
    importId: string,
    decision: 'applied' | 'rejected',
    by: string,
    now: Date,
    log: AccessLogEntry,
  ): Promise<DecideImportResult>

  /** Moves every pending push with expiresAt <= now to expired. Returns how many. */
  expireImports(now: Date): Promise<number>

  /** Pending pushes of a vault, newest first. */
  listImports(vaultId: string, filter: { status?: ImportStatus; limit: number }): Promise<ImportRecord[]>
}

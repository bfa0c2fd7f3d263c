import type { CiIdentityRecord } from '../adapters/ci-identity-store.js'
import type { AuthorizationCodeRecord } from '../adapters/oauth-store.js'
import type { ChangeEntry, NewChangeSet } from '../adapters/history-store.js'
import type { OverrideRow } from '../adapters/override-store.js'
import type { AccessLogRow, AuditRow, ImportRecord, Role, SealedVariable } from '../adapters/storage.js'
import type { DeliveryRecord, WebhookRecord } from '../adapters/webhook-store.js'
import { StorageError } from '../errors.js'

/**
 * The data of the reference in-memory store, and its transactions. Rows are
 * immutable objects (replaced, never edited), so a transaction works on a
 * draft made of copied maps and commits by swapping the draft in; a throw
 * drops the draft. Writers take turns (one lock); readers see the last
 * committed state. With `yieldBetweenSteps`, every step of a transaction
 * awaits a macrotask, as a networked database's round trips do: rules that
 * hold only inside a transaction then visibly hold, and check-then-act
 * across two calls visibly fails.
 */

export interface VaultRow {
  readonly id: string
  readonly name: string
  readonly plan: string
  readonly requireSecondPerson: boolean
  readonly createdAt: number
  readonly wrappedKey: Uint8Array | null
}

export interface EnvironmentRow {
  readonly ownersOnly: boolean
  readonly secondPerson: boolean
  readonly version: number
  readonly createdAt: number
}

export interface VariableRow {
  readonly sealed: Uint8Array
  readonly updatedAt: number
  readonly updatedBy: string | null
}

/** A change set (history-store.ts): entries frozen; retention replaces the row with fewer entries. */
export interface ChangeSetRow {
  readonly id: string
  readonly seq: number
  readonly vaultId: string
  readonly environment: string
  readonly at: number
  readonly by: string | null
  readonly how: NewChangeSet['how']
  readonly ref: string | null
  readonly entries: readonly ChangeEntry[]
}

/** A webhook (webhook-store.ts) with its sealed secret. */
export interface WebhookRow extends WebhookRecord {
  readonly sealedSecret: Uint8Array | null
}

/** A delivery with its claim. */
export interface DeliveryRow extends DeliveryRecord {
  readonly claimToken: string | null
  readonly claimedUntil: number | null
}

export interface SignInRow {
  readonly id: string
  readonly personId: string
  readonly clientId: string
  readonly resource: string
  readonly scopes: readonly string[]
  readonly codeHash: string | null
  readonly createdAt: number
  readonly expiresAt: number
  readonly lastUsedAt: number | null
  readonly revokedAt: number | null
  readonly label?: string | null
}

export interface State {
  vaults: Map<string, VaultRow>
  /** vault → person → role */
  members: Map<string, Map<string, Role>>
  /** vault → environment name → row */
  environments: Map<string, Map<string, EnvironmentRow>>
  /** `vault\0environment` → name → row */
  variables: Map<string, Map<string, VariableRow>>
  imports: Map<string, ImportRecord>
  /** import → name → sealed */
  importValues: Map<string, Map<string, Uint8Array>>
  accessLog: AccessLogRow[]
  nextLogId: number
  /** server-level audit rows, oldest first */
  audit: AuditRow[]
  /** in seq order */
  changeSets: ChangeSetRow[]
  nextChangeSeq: number
  codes: Map<string, AuthorizationCodeRecord>
  signIns: Map<string, SignInRow>
  accessTokens: Map<string, { readonly signInId: string; readonly expiresAt: number }>
  refreshTokens: Map<string, { readonly signInId: string; readonly usedAt: number | null }>
  ciIdentities: Map<string, CiIdentityRecord>
  /** exchanged identity tokens: key → when it may be forgotten */
  usedSubjectTokens: Map<string, number>
  webhooks: Map<string, WebhookRow>
  deliveries: Map<string, DeliveryRow>
  nextDeliveryId: number
  /** `vault\0environment` of the environments that allow personal overrides */
  overridesAllowed: Set<string>
  /** `vault\0environment` → `name\0person` → row */
  overrides: Map<string, Map<string, OverrideRow>>
}

/** The webhooks of one vault, in the order they were added. */
export function webhooksOf(s: State, vaultId: string): WebhookRow[] {
  return [...s.webhooks.values()].filter((w) => w.vaultId === vaultId)
}

export function emptyState(): State {
  return {
    vaults: new Map(),
    members: new Map(),
    environments: new Map(),
    variables: new Map(),
    imports: new Map(),
    importValues: new Map(),
    accessLog: [],
    nextLogId: 1,
    audit: [],
    changeSets: [],
    nextChangeSeq: 1,
    codes: new Map(),
    signIns: new Map(),
    accessTokens: new Map(),
    refreshTokens: new Map(),
    ciIdentities: new Map(),
    usedSubjectTokens: new Map(),
    webhooks: new Map(),
    deliveries: new Map(),
    nextDeliveryId: 1,
    overridesAllowed: new Set(),
    overrides: new Map(),
  }
}

function cloneNested<K, K2, V>(m: Map<K, Map<K2, V>>): Map<K, Map<K2, V>> {
  const out = new Map<K, Map<K2, V>>()
  for (const [k, v] of m) out.set(k, new Map(v))
  return out
}

function draftOf(s: State): State {
  return {
    vaults: new Map(s.vaults),
    members: cloneNested(s.members),
    environments: cloneNested(s.environments),
    variables: cloneNested(s.variables),
    imports: new Map(s.imports),
    importValues: cloneNested(s.importValues),
    accessLog: [...s.accessLog],
    nextLogId: s.nextLogId,
    audit: [...s.audit],
    changeSets: [...s.changeSets],
    nextChangeSeq: s.nextChangeSeq,
    codes: new Map(s.codes),
    signIns: new Map(s.signIns),
    accessTokens: new Map(s.accessTokens),
    refreshTokens: new Map(s.refreshTokens),
    ciIdentities: new Map(s.ciIdentities),
    usedSubjectTokens: new Map(s.usedSubjectTokens),
    webhooks: new Map(s.webhooks),
    deliveries: new Map(s.deliveries),
    nextDeliveryId: s.nextDeliveryId,
    overridesAllowed: new Set(s.overridesAllowed),
    overrides: cloneNested(s.overrides),
  }
}

export const varKey = (vaultId: string, environment: string): string => `${vaultId}\0${environment}`

/** A copy, so neither the caller nor the store can change the other's bytes. */
export const copyBytes = (u: Uint8Array): Uint8Array => new Uint8Array(u)

export type BrokenTable = 'access_log' | 'variables' | 'import_values'

export interface MemoryDbOptions {
  readonly yieldBetweenSteps?: boolean
}

/** The state, its write lock and the probe's broken writes. */
export class MemoryDb {
  #state: State = emptyState()
  #lock: Promise<void> = Promise.resolve()
  #waiting = 0
  #closed = false
  readonly #yield: boolean
  readonly broken: { what: BrokenTable; name: string | undefined }[] = []

  constructor(o: MemoryDbOptions = {}) {
    this.#yield = o.yieldBetweenSteps === true
  }

  /** How many writes wait for the write lock now (the contract probe's `lockWaiters`). */
  get waitingWriters(): number {
    return this.#waiting
  }

  /** The committed state (readers never see a draft). */
  get committed(): State {
    return this.#state
  }

  close(): void {
    this.#closed = true
  }

  /** One step of a transaction: a macrotask when yielding, else nothing. */
  async step(): Promise<void> {
    if (this.#yield) await new Promise<void>((resolve) => setImmediate(resolve))
  }

  #open(table: string): void {
    if (this.#closed) throw new StorageError('08006', table)
  }

  /** A read of committed state (after one step). */
  async read<T>(table: string, fn: (s: State) => T): Promise<T> {
    this.#open(table)
    await this.step()
    return fn(this.#state)
  }

  /**
   * A write transaction: waits its turn, works on a draft (`fn` may await
   * `step()` between its statements), commits by swapping the draft in, or
   * drops it if `fn` throws.
   */
  async write<T>(table: string, fn: (s: State) => T | Promise<T>): Promise<T> {
    this.#open(table)
    const previous = this.#lock
    let release!: () => void
    this.#lock = new Promise<void>((resolve) => (release = resolve))
    this.#waiting++
    try {
      await previous
    } finally {
      this.#waiting--
    }
    try {
      this.#open(table)
      const draft = draftOf(this.#state)
      await this.step()
      const result = await fn(draft)
      await this.step()
      this.#state = draft
      return result
    } finally {
      release()
    }
  }

  /** Throws as a failing constraint would if the probe broke writes into `what` (for `name`). */
  checkWrite(what: BrokenTable, name?: string): void {
    for (const b of this.broken) {
      if (b.what === what && (b.name === undefined || b.name === name)) throw new StorageError('23514', what) // as a failing constraint: names the table, never the cause
    }
  }

  /** Bumps an environment's version in the draft. */
  bumpVersion(s: State, vaultId: string, environment: string): void {
    const envs = s.environments.get(vaultId)
    const e = envs?.get(environment)
    if (envs && e) envs.set(environment, { ...e, version: e.version + 1 })
  }

  /** Writes one variable in the draft; the environment must exist (23503). */
  putVariable(s: State, vaultId: string, environment: string, v: SealedVariable, by: string | null, at: number): void {
    this.checkWrite('variables', v.name)
    if (!s.environments.get(vaultId)?.has(environment)) throw new StorageError('23503', 'variables_environment')
    const key = varKey(vaultId, environment)
    let vars = s.variables.get(key)
    if (!vars) {
      vars = new Map()
      s.variables.set(key, vars)
    }
    vars.set(v.name, Object.freeze({ sealed: copyBytes(v.sealed), updatedAt: at, updatedBy: by }))
  }

  /** Appends a change set in the draft (none when it has no entry); the environment must exist (23503), the id be new (23505). */
  putChangeSet(s: State, c: NewChangeSet): void {
    if (c.entries.length === 0) return
    if (!s.environments.get(c.vaultId)?.has(c.environment)) throw new StorageError('23503', 'change_sets_environment')
    if (s.changeSets.some((r) => r.id === c.id)) throw new StorageError('23505', 'change_sets_pk')
    const entries = c.entries.map((e) =>
      Object.freeze({ name: e.name, kind: e.kind, before: e.before && copyBytes(e.before), after: e.after && copyBytes(e.after) }),
    )
    s.changeSets.push(
      Object.freeze({
        id: c.id,
        seq: s.nextChangeSeq++,
        vaultId: c.vaultId,
        environment: c.environment,
        at: c.at.getTime(),
        by: c.by,
        how: c.how,
        ref: c.ref,
        entries: Object.freeze(entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))),
      }),
    )
  }

  /** Appends a log row in the draft; the vault must exist (as a foreign key would say). */
  appendLog(s: State, row: Omit<AccessLogRow, 'id'>): void {
    this.checkWrite('access_log')
    if (!s.vaults.has(row.vaultId)) throw new StorageError('23503', 'access_log')
    s.accessLog.push(Object.freeze({ ...row, names: Object.freeze([...row.names]), id: s.nextLogId++ }))
  }
}

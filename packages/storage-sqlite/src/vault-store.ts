import type {
  AccessAction,
  AccessLogEntry,
  AccessLogRow,
  CreateEnvironmentResult,
  EnvironmentInfo,
  MemberChange,
  NewEnvironment,
  NewVault,
  RemoveMemberResult,
  Role,
  SealedVariable,
  SetMemberResult,
  VariableMeta,
  VaultAccess,
  VaultInfo,
  VaultRecord,
  VaultStore,
  ImportStore,
} from '@envkeep/env-api-plugin'
import { boundMethods, memberChangeEntry, StorageError } from '@envkeep/env-api-plugin'
import { sql } from 'kysely'
import type { OpenDatabase } from './database.js'
import { SqliteImportStore } from './import-store.js'
import { SqliteKeyStore } from './key-store.js'
import { SqliteStoreBase } from './sqlite-store-base.js'
import { createSqliteVaultAdminStore } from './vault-admin-store.js'

/**
 * The vault store on SQLite. Every method runs synchronous better-sqlite3
 * work in one transaction through `runSync`, so nothing else on the shared
 * connection can interleave with it, and failures become `StorageError`.
 * Queries are built with kysely and compiled (typed against schema.ts), except
 * on the per-request paths (vault look-ups, readVariables, the log insert),
 * which are hand-written and prepared once: compiling costs more than running.
 */
export function createSqliteVaultStore(d: OpenDatabase): VaultStore {
  return {
    ...boundMethods(new SqliteVaultStore(d)),
    ...boundMethods(new SqliteImportStore(d)),
    ...boundMethods(new SqliteKeyStore(d)),
    ...createSqliteVaultAdminStore(d),
  } satisfies VaultStore
}

/** The vault store but its administration (vault-admin-store.ts). */
type VaultCore = Omit<
  VaultStore,
  'renameVault' | 'deleteVault' | 'listAudit' | 'setEnvironmentRules' | 'getWrappedKey' | 'ensureWrappedKey' | 'rewrapKeys' | 'resealVault' | keyof ImportStore
>

interface VaultRow {
  id: string
  name: string
  plan: string
  require_second_person: number
  created_at: number
  role: Role
}

interface EnvRow {
  vault_id: string
  name: string
  owners_only: number
  second_person: number
}

/** Statements of the hot read path, written by hand and prepared once. */
const READ_VARIABLES_SQL = 'select "name", "sealed" from "variables" where "vault_id" = ? and "environment" = ? order by "name"'
const READ_ONE_VARIABLE_SQL = 'select "name", "sealed" from "variables" where "vault_id" = ? and "environment" = ? and "name" = ?'
const ENV_VERSION_SQL = 'select "version" from "environments" where "vault_id" = ? and "name" = ?'
export const INSERT_LOG_SQL =
  'insert into "access_log" ("vault_id", "at", "person_id", "sign_in_id", "client_id", "action", "environment", "names", "address", "subject", "detail") values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)'

/** A person's vaults: all of them, one by id, or those with a name (parameters: person, then id or name). */
const ACCESS_VAULTS_SQL = {
  all: 'select v.id, v.name, v.plan, v.require_second_person, v.created_at, m.role from vaults v join members m on m.vault_id = v.id where m.person_id = ? order by v.name, v.id',
  id: 'select v.id, v.name, v.plan, v.require_second_person, v.created_at, m.role from vaults v join members m on m.vault_id = v.id where m.person_id = ? and v.id = ? order by v.name, v.id',
  name: 'select v.id, v.name, v.plan, v.require_second_person, v.created_at, m.role from vaults v join members m on m.vault_id = v.id where m.person_id = ? and v.name = ? order by v.name, v.id',
} as const
const ACCESS_ENVIRONMENTS_SQL = {
  all: 'select e.vault_id, e.name, e.owners_only, e.second_person from environments e join members m on m.vault_id = e.vault_id where m.person_id = ? order by e.vault_id, e.name',
  id: 'select e.vault_id, e.name, e.owners_only, e.second_person from environments e join members m on m.vault_id = e.vault_id where m.person_id = ? and e.vault_id = ? order by e.name',
  name: 'select e.vault_id, e.name, e.owners_only, e.second_person from environments e join members m on m.vault_id = e.vault_id join vaults v on v.id = e.vault_id where m.person_id = ? and v.name = ? order by e.vault_id, e.name',
} as const

/** Variables one group commit may hold before the remaining reads wait for the next (see #commitReads). */
const GROUP_COMMIT_ROWS = 1000

/** A readVariables call waiting for the next group commit. */
interface PendingRead {
  readonly vaultId: string
  readonly environment: string
  readonly log: AccessLogEntry
  readonly names?: readonly string[] | undefined
  resolve(r: { variables: SealedVariable[]; version: number }): void
  reject(err: unknown): void
}

class SqliteVaultStore extends SqliteStoreBase implements VaultCore {
  #pendingReads: PendingRead[] = []
  /** variables found by the last read of each environment ("vault/env"), to keep large reads out of group commits */
  readonly #lastReadSize = new Map<string, number>()

  /**
   * The vaults a person sees, with role and environments. Hand-written,
   * prepared-once SQL: every API request starts here.
   */
  #access(personId: string, filter: { vaultId?: string; name?: string }): VaultAccess[] {
    const by = filter.vaultId !== undefined ? 'id' : filter.name !== undefined ? 'name' : 'all'
    const args = by === 'id' ? [personId, filter.vaultId] : by === 'name' ? [personId, filter.name] : [personId]
    const vaults = this.stmt(ACCESS_VAULTS_SQL[by]).all(...args) as VaultRow[]
    if (vaults.length === 0) return []
    const envs = new Map<string, EnvironmentInfo[]>()
    for (const e of this.stmt(ACCESS_ENVIRONMENTS_SQL[by]).all(...args) as EnvRow[]) {
      let list = envs.get(e.vault_id)
      if (!list) {
        list = []
        envs.set(e.vault_id, list)
      }
      list.push({ name: e.name, ownersOnly: e.owners_only === 1, secondPerson: e.second_person === 1 })
    }
    return vaults.map((v) => ({
      id: v.id,
      name: v.name,
      plan: v.plan,
      requireSecondPerson: v.require_second_person === 1,
      createdAt: new Date(v.created_at),
      role: v.role,
      environments: envs.get(v.id) ?? [],
    }))
  }

  // ---- vaults -------------------------------------------------------------

  createVault(input: NewVault, log: AccessLogEntry): Promise<VaultRecord> {
    const at = input.now.getTime()
    return this.tx('immediate', 'vaults', () => {
      this.run(
        this.db.insertInto('vaults').values({ id: input.id, name: input.name, plan: input.plan, require_second_person: 0, wrapped_key: null, created_at: at }),
      )
      this.run(this.db.insertInto('members').values({ vault_id: input.id, person_id: input.ownerId, role: 'owner' }))
      for (const e of input.environments) {
        this.run(
          this.db.insertInto('environments').values({
            vault_id: input.id,
            name: e.name,
            owners_only: e.ownersOnly ? 1 : 0,
            second_person: (e.secondPerson ?? e.ownersOnly) ? 1 : 0,
            version: 0,
            created_at: at,
          }),
        )
      }
      this.log(log)
      return {
        id: input.id,
        name: input.name,
        plan: input.plan,
        requireSecondPerson: false,
        createdAt: new Date(at),
      }
    })
  }

  listVaults(personId: string): Promise<VaultAccess[]> {
    return this.tx('deferred', 'vaults', () => this.#access(personId, {}))
  }

  getVault(vaultId: string, personId: string): Promise<VaultAccess | null> {
    return this.tx('deferred', 'vaults', () => this.#access(personId, { vaultId })[0] ?? null)
  }

  findVaults(filter: { readonly id: string } | { readonly name: string } | Record<string, never>): Promise<VaultInfo[]> {
    return this.tx('deferred', 'vaults', () => {
      let q = this.db.selectFrom('vaults').select(['id', 'name', 'plan', 'require_second_person', 'created_at'])
      if ('id' in filter) q = q.where('id', '=', filter.id)
      else if ('name' in filter) q = q.where('name', '=', filter.name)
      return this.all(q.orderBy('id')).map((v) => ({
        id: v.id,
        name: v.name,
        plan: v.plan,
        requireSecondPerson: v.require_second_person === 1,
        createdAt: new Date(v.created_at),
        environments: this.all(
          this.db.selectFrom('environments').select(['name', 'owners_only', 'second_person']).where('vault_id', '=', v.id).orderBy('name'),
        ).map((e) => ({
          name: e.name,
          ownersOnly: e.owners_only === 1,
          secondPerson: e.second_person === 1,
        })),
      }))
    })
  }

  createEnvironment(input: NewEnvironment, log: AccessLogEntry): Promise<CreateEnvironmentResult> {
    return this.tx('immediate', 'environments', (): CreateEnvironmentResult => {
      if (!this.#vaultExists(input.vaultId)) throw new StorageError('23503', 'environments')
      const exists = this.first(this.db.selectFrom('environments').select('name').where('vault_id', '=', input.vaultId).where('name', '=', input.name))
      if (exists) return { ok: false, reason: 'exists' }
      this.run(
        this.db.insertInto('environments').values({
          vault_id: input.vaultId,
          name: input.name,
          owners_only: input.ownersOnly ? 1 : 0,
          second_person: (input.secondPerson ?? input.ownersOnly) ? 1 : 0,
          version: 0,
          created_at: input.now.getTime(),
        }),
      )
      this.log(log)
      return { ok: true }
    })
  }

  // ---- members ------------------------------------------------------------

  #vaultExists(vaultId: string): boolean {
    return this.first(this.db.selectFrom('vaults').select('id').where('id', '=', vaultId)) !== undefined
  }

  #roleOf(vaultId: string, personId: string): Role | null {
    return this.first(this.db.selectFrom('members').select('role').where('vault_id', '=', vaultId).where('person_id', '=', personId))?.role ?? null
  }

  #ownerCount(vaultId: string): number {
    return this.first(this.db.selectFrom('members').select(sql<number>`count(*)`.as('n')).where('vault_id', '=', vaultId).where('role', '=', 'owner'))?.n ?? 0
  }

  /** Both checks inside the caller's IMMEDIATE transaction: no other writer can change the owners meanwhile. */
  setMember(change: MemberChange, log: AccessLogEntry): Promise<SetMemberResult> {
    return this.tx('immediate', 'members', (): SetMemberResult => {
      if (!this.#vaultExists(change.vaultId)) throw new StorageError('23503', 'members')
      const previous = this.#roleOf(change.vaultId, change.personId)
      const expect = change.expect ?? 'any'
      if (expect === 'new' && previous !== null) return { ok: false, reason: 'already_member' }
      if (expect === 'existing' && previous === null) return { ok: false, reason: 'not_member' }
      if (previous === change.role) return { ok: true, previous }
      if (previous === 'owner' && this.#ownerCount(change.vaultId) <= 1) return { ok: false, reason: 'last_owner' }
      this.run(
        this.db
          .insertInto('members')
          .values({ vault_id: change.vaultId, person_id: change.personId, role: change.role })
          .onConflict((oc) => oc.columns(['vault_id', 'person_id']).doUpdateSet({ role: change.role })),
      )
      this.log(memberChangeEntry(log, previous))
      return { ok: true, previous }
    })
  }

  removeMember(input: { readonly vaultId: string; readonly personId: string }, log: AccessLogEntry): Promise<RemoveMemberResult> {
    return this.tx('immediate', 'members', (): RemoveMemberResult => {
      const previous = this.#roleOf(input.vaultId, input.personId)
      if (previous === null) return { ok: false, reason: 'not_member' }
      if (previous === 'owner' && this.#ownerCount(input.vaultId) <= 1) return { ok: false, reason: 'last_owner' }
      this.run(this.db.deleteFrom('members').where('vault_id', '=', input.vaultId).where('person_id', '=', input.personId))
      this.log(log)
      return { ok: true, previous }
    })
  }

  listMembers(vaultId: string): Promise<{ personId: string; role: Role }[]> {
    return this.tx('none', 'members', () =>
      this.all(this.db.selectFrom('members').select(['person_id', 'role']).where('vault_id', '=', vaultId).orderBy('person_id')).map((r) => ({
        personId: r.person_id,
        role: r.role,
      })),
    )
  }

  // ---- variables ----------------------------------------------------------

  readVariables(
    vaultId: string,
    environment: string,
    log: AccessLogEntry,
    names?: readonly string[],
  ): Promise<{ variables: SealedVariable[]; version: number }> {
    const r = { vaultId, environment, log, names }
    // A read of chosen names is small and rare (the pages' Reveal): alone.
    // An environment that was large when last read is read at once, alone:
    // held over to the next turn, its rows outlive a young-generation GC
    // and cost more than the shared commit saves.
    if (names !== undefined || (this.#lastReadSize.get(`${vaultId}/${environment}`) ?? 0) >= GROUP_COMMIT_ROWS) {
      return this.tx('immediate', 'variables', () => this.#readOne(r))
    }
    return new Promise((resolve, reject) => {
      this.#pendingReads.push({ ...r, resolve, reject })
      if (this.#pendingReads.length === 1) setImmediate(() => this.#commitReads())
    })
  }

  /** One read with its log entry; runs inside the caller's transaction. */
  #readOne(r: Omit<PendingRead, 'resolve' | 'reject'>): { variables: SealedVariable[]; version: number } {
    let variables: SealedVariable[]
    if (r.names === undefined) {
      variables = this.stmt(READ_VARIABLES_SQL).all(r.vaultId, r.environment) as SealedVariable[]
      if (this.#lastReadSize.size >= 10_000) this.#lastReadSize.clear()
      this.#lastReadSize.set(`${r.vaultId}/${r.environment}`, variables.length)
    } else {
      const one = this.stmt(READ_ONE_VARIABLE_SQL)
      variables = [...new Set(r.names)]
        .sort()
        .map((n) => one.get(r.vaultId, r.environment, n) as SealedVariable | undefined)
        .filter((v) => v !== undefined)
    }
    const v = this.stmt(ENV_VERSION_SQL).get(r.vaultId, r.environment) as { version: number } | undefined
    this.log({ ...r.log, names: variables.map((x) => x.name) }) // the log names exactly what was read
    return { variables, version: v?.version ?? 0 }
  }

  /**
   * Group commit: the reads asked for during one turn of the event loop run
   * in one IMMEDIATE transaction, each with its log entry, and each promise
   * settles only once that transaction has committed (so no value leaves
   * before its entry is written). A transaction takes reads until they hold
   * GROUP_COMMIT_ROWS variables; the rest wait for the next turn, after
   * these are answered, so large reads are not all held in memory at once.
   * If the shared transaction fails, each of its reads is retried alone, so
   * one bad entry fails only its own read.
   */
  #commitReads(): void {
    const queue = this.#pendingReads
    this.#pendingReads = []
    const alone = (r: PendingRead): void => {
      this.tx('immediate', 'variables', () => this.#readOne(r)).then(r.resolve, r.reject)
    }
    if (queue.length === 1) {
      alone(queue[0] as PendingRead)
      return
    }
    // reads tried in the shared transaction; the rest go to the next turn
    let tried = 0
    const requeueRest = (): void => {
      const rest = queue.slice(tried)
      if (rest.length === 0) return
      const wasIdle = this.#pendingReads.length === 0
      this.#pendingReads = [...rest, ...this.#pendingReads]
      if (wasIdle) setImmediate(() => this.#commitReads())
    }
    this.tx('immediate', 'variables', () => {
      const results: { variables: SealedVariable[]; version: number }[] = []
      let rows = 0
      for (const r of queue) {
        if (rows >= GROUP_COMMIT_ROWS) break
        tried++
        const one = this.#readOne(r)
        results.push(one)
        rows += one.variables.length
      }
      return results
    }).then(
      (results) => {
        for (const [i, one] of results.entries()) (queue[i] as PendingRead).resolve(one)
        requeueRest()
      },
      () => {
        queue.slice(0, Math.max(tried, 1)).forEach(alone)
        tried = Math.max(tried, 1)
        requeueRest()
      },
    )
  }

  listVariableNames(vaultId: string, environment: string): Promise<VariableMeta[]> {
    return this.tx('none', 'variables', () =>
      this.all(
        this.db
          .selectFrom('variables')
          .select(['name', 'updated_at', 'updated_by'])
          .where('vault_id', '=', vaultId)
          .where('environment', '=', environment)
          .orderBy('name'),
      ).map((r) => ({ name: r.name, updatedAt: new Date(r.updated_at), updatedBy: r.updated_by })),
    )
  }

  // ---- access log ---------------------------------------------------------

  appendAccessLog(entry: AccessLogEntry): Promise<void> {
    return this.tx('none', 'access_log', () => this.log(entry))
  }

  listAccessLog(vaultId: string, filter: { environment?: string; action?: AccessAction; limit: number; before?: number }): Promise<AccessLogRow[]> {
    return this.tx('none', 'access_log', () => {
      let q = this.db.selectFrom('access_log').selectAll().where('vault_id', '=', vaultId)
      if (filter.environment !== undefined) q = q.where('environment', '=', filter.environment)
      if (filter.action !== undefined) q = q.where('action', '=', filter.action)
      if (filter.before !== undefined) q = q.where('id', '<', filter.before)
      const limit = Math.max(0, Math.trunc(filter.limit))
      return this.all(q.orderBy('id', 'desc').limit(limit)).map((r) => ({
        id: r.id,
        vaultId: r.vault_id,
        at: new Date(r.at),
        personId: r.person_id,
        signInId: r.sign_in_id,
        clientId: r.client_id,
        action: r.action as AccessAction,
        environment: r.environment,
        names: JSON.parse(r.names) as string[],
        address: r.address,
        subject: r.subject,
        detail: r.detail,
      }))
    })
  }
}

/** The parameters of INSERT_LOG_SQL for one entry. */
export function logParams(e: AccessLogEntry): unknown[] {
  return [e.vaultId, e.at.getTime(), e.personId, e.signInId, e.clientId, e.action, e.environment, JSON.stringify(e.names), e.address, e.subject, e.detail]
}

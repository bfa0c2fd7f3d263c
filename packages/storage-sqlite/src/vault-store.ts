import type {
  AccessLogEntry,
  CreateEnvironmentResult,
  EnvironmentInfo,
  MemberChange,
  NewEnvironment,
  NewVault,
  RemoveMemberResult,
  Role,
  SetMemberResult,
  VaultAccess,
  VaultInfo,
  VaultRecord,
  VaultStore,
  ImportStore,
} from '@envkeep/env-api-plugin'
import { boundMethods, memberChangeEntry, StorageError } from '@envkeep/env-api-plugin'
import { sql } from 'kysely'
import type { OpenDatabase } from './database.js'
import { SqliteKeyStore } from './key-store.js'
import { SqliteStoreBase } from './sqlite-store-base.js'
import { createSqliteVaultAdminStore } from './vault-admin-store.js'

/**
 * The vault store on SQLite. Every method runs synchronous better-sqlite3
 * work in one transaction through `runSync`, so nothing else on the shared
 * connection can interleave with it, and failures become `StorageError`.
 * Queries are built with kysely and compiled (typed against schema.ts), except
 * on the per-request paths (vault look-ups, the log insert of changes),
 * which are hand-written and prepared once: compiling costs more than running.
 */
export function createSqliteVaultStore(d: OpenDatabase): Omit<VaultStore, SqlCoreMethods> {
  return {
    ...boundMethods(new SqliteVaultStore(d)),
    ...boundMethods(new SqliteKeyStore(d)),
    ...createSqliteVaultAdminStore(d),
  } satisfies VaultCore &
    Pick<VaultStore, 'renameVault' | 'deleteVault' | 'listAudit' | 'setEnvironmentRules' | 'getWrappedKey' | 'ensureWrappedKey' | 'rewrapKeys' | 'resealVault'>
}

/** What the SQL core (@envkeep/storage-sql) answers of the vault store: the access log and the pushes. */
type SqlCoreMethods = 'appendAccessLog' | 'listAccessLog' | keyof ImportStore

/** The vault store but its administration (vault-admin-store.ts) and what the SQL core answers. */
type VaultCore = Omit<
  VaultStore,
  'renameVault' | 'deleteVault' | 'listAudit' | 'setEnvironmentRules' | 'getWrappedKey' | 'ensureWrappedKey' | 'rewrapKeys' | 'resealVault' | SqlCoreMethods
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

class SqliteVaultStore extends SqliteStoreBase implements VaultCore {
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
}

/** The parameters of INSERT_LOG_SQL for one entry. */
export function logParams(e: AccessLogEntry): unknown[] {
  return [e.vaultId, e.at.getTime(), e.personId, e.signInId, e.clientId, e.action, e.environment, JSON.stringify(e.names), e.address, e.subject, e.detail]
}

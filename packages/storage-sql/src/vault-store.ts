import type {
  AccessLogEntry,
  AuditRow,
  ChangeResult,
  EnvironmentInfo,
  MemberChange,
  MemberChangeResult,
  NewVault,
  Role,
  VaultAccess,
  VaultChange,
  VaultInfo,
  VaultRecord,
  VaultStore,
} from '@envkeep/env-api-plugin'
import { memberChangeEntry } from '@envkeep/env-api-plugin'
import { sql } from 'kysely'
import { insertLog } from './access-log.js'
import { DONE } from './access-log-store.js'
import { jsonArray, type SqlDialect, type SqlRunner } from './dialect.js'
import { fixedQuery } from './fixed-query.js'
import { all, first, type Op, run } from './op.js'
import { date, flag, fromJson, isSet, num } from './rows.js'
import { lockVault } from './vault-lock.js'

/** The vault half of the contract the core writes here: vaults, their environments and members, the audit log. */
export type VaultMethods = Pick<
  VaultStore,
  'createVault' | 'listVaults' | 'findVaults' | 'changeVault' | 'deleteVault' | 'listAudit' | 'changeMember' | 'listMembers'
>

/**
 * Vaults, environments, members and the server-level audit log (vault-store.ts
 * in the plugin): tables vaults, environments, members, audit_log. Every change
 * of a vault first locks its row (PostgreSQL `for no key update`, vault-lock.ts; SQLite's write
 * transaction holds the database), so the rules checked inside (last owner,
 * an environment's name) hold under any number of writers.
 */
export function createVaultStore(s: SqlRunner): VaultMethods {
  const d = s.dialect
  return {
    createVault: (input, log) => s.write(() => createVault(d, input, log)),
    listVaults: (personId, filter = {}) => s.read(() => listVaults(d, personId, filter.vaultId)),
    findVaults: (filter) => s.read(() => findVaults(d, filter)),
    changeVault: (change, log) => s.write(() => changeVault(d, change, log)),
    deleteVault: (input) => s.write(() => deleteVault(d, input)),
    listAudit: (filter) => s.read(() => listAudit(d, filter.limit)),
    changeMember: (change, log) => s.write(() => changeMember(d, change, log)),
    listMembers: (vaultId) =>
      s.read(function* () {
        const rows = yield* all(d.db.selectFrom('members').select(['person_id', 'role']).where('vault_id', '=', vaultId).orderBy(d.byBytes('person_id')))
        return rows.map((r) => ({ personId: r.person_id, role: r.role }))
      }),
  }
}

function record(v: { id: string; name: string; plan: string; require_second_person: unknown; created_at: unknown }): VaultRecord {
  return { id: v.id, name: v.name, plan: v.plan, requireSecondPerson: isSet(v.require_second_person), createdAt: date(v.created_at) }
}

/** A vault's environments as stored in its JSON column, in name order (by bytes, as the memory store sorts). */
function environments(v: unknown): EnvironmentInfo[] {
  const list = fromJson<{ name: string; owners_only: unknown; second_person: unknown }[] | null>(v) ?? []
  return list
    .map((e) => ({ name: e.name, ownersOnly: isSet(e.owners_only), secondPerson: isSet(e.second_person) }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
}

/** The environments of the vault in the outer query (`v`), as one JSON column. */
function environmentsOf(d: SqlDialect) {
  return jsonArray(
    d,
    d.db.selectFrom('environments as e').select(['e.name', 'e.owners_only', 'e.second_person']).where('e.vault_id', '=', sql.ref<string>('v.id')),
  ).as('environments')
}

function* createVault(d: SqlDialect, input: NewVault, log: AccessLogEntry) {
  const at = input.now.getTime()
  yield* run(
    d.db
      .insertInto('vaults')
      .values({ id: input.id, name: input.name, plan: input.plan, require_second_person: flag(false), wrapped_key: null, created_at: at }),
  )
  yield* run(d.db.insertInto('members').values({ vault_id: input.id, person_id: input.ownerId, role: 'owner' }))
  for (const e of input.environments) {
    yield* run(
      d.db.insertInto('environments').values({
        vault_id: input.id,
        name: e.name,
        owners_only: flag(e.ownersOnly),
        second_person: flag(e.secondPerson ?? e.ownersOnly),
        version: 0,
        created_at: at,
      }),
    )
  }
  yield* insertLog(d, log)
  const value: VaultRecord = { id: input.id, name: input.name, plan: input.plan, requireSecondPerson: false, createdAt: new Date(at) }
  return { ok: true as const, value }
}

/** A person's vaults, with their role and environments (one statement: the environments come along as JSON). */
function mine(d: SqlDialect, personId: string) {
  return d.db
    .selectFrom('vaults as v')
    .innerJoin('members as m', 'm.vault_id', 'v.id')
    .select(['v.id', 'v.name', 'v.plan', 'v.require_second_person', 'v.created_at', 'm.role'])
    .select(environmentsOf(d))
    .where('m.person_id', '=', personId)
}
type MineRow = Awaited<ReturnType<ReturnType<typeof mine>['executeTakeFirstOrThrow']>>
const allMine = fixedQuery<[string], MineRow>((d, arg) => mine(d, arg(0)).orderBy(d.byBytes('v.name')).orderBy(d.byBytes('v.id')))
/** The API's every request starts here: by the members' primary key, compiled once. */
const oneOfMine = fixedQuery<[string, string], MineRow>((d, arg) => mine(d, arg(0)).where('v.id', '=', arg(1)))

function* listVaults(d: SqlDialect, personId: string, vaultId: string | undefined) {
  const rows = yield* all(vaultId === undefined ? allMine(d, personId) : oneOfMine(d, personId, vaultId))
  return rows.map((v): VaultAccess => ({ ...record(v), role: v.role, environments: environments(v.environments) }))
}

function* findVaults(d: SqlDialect, filter: { readonly id: string } | { readonly name: string } | Record<string, never>) {
  const rows = yield* all(
    d.db
      .selectFrom('vaults as v')
      .select(['v.id', 'v.name', 'v.plan', 'v.require_second_person', 'v.created_at'])
      .select(environmentsOf(d))
      .$if('id' in filter, (q) => q.where('v.id', '=', (filter as { id: string }).id))
      .$if('name' in filter, (q) => q.where('v.name', '=', (filter as { name: string }).name))
      .orderBy(d.byBytes('v.id')),
  )
  return rows.map((v): VaultInfo => ({ ...record(v), environments: environments(v.environments) }))
}

function* changeVault(d: SqlDialect, change: VaultChange, log: AccessLogEntry): Op<ChangeResult<'not_found' | 'exists'>> {
  if (!(yield* lockVault(d, change.vaultId))) return { ok: false, reason: 'not_found' }
  const { vaultId } = change
  if (change.kind === 'rename') {
    yield* run(d.db.updateTable('vaults').set({ name: change.name }).where('id', '=', vaultId))
  } else {
    const name = change.kind === 'environment_rules' ? change.environment : change.name
    const env = yield* first(d.db.selectFrom('environments').select('name').where('vault_id', '=', vaultId).where('name', '=', name))
    if (change.kind === 'environment_rules') {
      if (!env) return { ok: false, reason: 'not_found' }
      const set = {
        ...(change.ownersOnly === undefined ? {} : { owners_only: flag(change.ownersOnly) }),
        ...(change.secondPerson === undefined ? {} : { second_person: flag(change.secondPerson) }),
      }
      if (Object.keys(set).length > 0) yield* run(d.db.updateTable('environments').set(set).where('vault_id', '=', vaultId).where('name', '=', name))
    } else {
      if (env) return { ok: false, reason: 'exists' }
      yield* run(
        d.db.insertInto('environments').values({
          vault_id: vaultId,
          name,
          owners_only: flag(change.ownersOnly),
          second_person: flag(change.secondPerson ?? change.ownersOnly),
          version: 0,
          created_at: change.now.getTime(),
        }),
      )
    }
  }
  yield* insertLog(d, log)
  return DONE
}

/** The foreign keys' ON DELETE CASCADE take everything the vault holds (SQLite runs with foreign_keys = ON). */
function* deleteVault(d: SqlDialect, input: { readonly vaultId: string; readonly by: string | null; readonly at: Date }) {
  if (!(yield* lockVault(d, input.vaultId))) return { ok: false, reason: 'not_found' } as const
  const v = yield* first(d.db.selectFrom('vaults').select(['id', 'name']).where('id', '=', input.vaultId))
  if (!v) return { ok: false, reason: 'not_found' } as const
  yield* run(d.db.deleteFrom('vaults').where('id', '=', v.id))
  yield* run(d.db.insertInto('audit_log').values({ at: input.at.getTime(), person_id: input.by, action: 'vault_deleted', vault_id: v.id, vault_name: v.name }))
  return DONE
}

function* listAudit(d: SqlDialect, limit: number) {
  const rows = yield* all(
    d.db
      .selectFrom('audit_log')
      .select(['id', 'at', 'person_id', 'action', 'vault_id', 'vault_name'])
      .orderBy('id', 'desc')
      .limit(Math.max(0, Math.trunc(limit))),
  )
  return rows.map((r): AuditRow => ({ id: num(r.id), at: date(r.at), personId: r.person_id, action: r.action, vaultId: r.vault_id, vaultName: r.vault_name }))
}

/** Both checks inside the write transaction, on the locked vault: no other writer changes its owners meanwhile. */
function* changeMember(d: SqlDialect, change: MemberChange, log: AccessLogEntry): Op<MemberChangeResult> {
  const { vaultId, personId } = change
  if (!(yield* lockVault(d, vaultId))) return { ok: false, reason: change.kind === 'remove' ? 'not_member' : 'not_found' }
  const members = yield* all(d.db.selectFrom('members').select(['person_id', 'role']).where('vault_id', '=', vaultId))
  const previous: Role | null = members.find((m) => m.person_id === personId)?.role ?? null
  if (change.kind === 'remove') {
    if (previous === null) return { ok: false, reason: 'not_member' }
  } else {
    const expect = change.expect ?? 'any'
    if (expect === 'new' && previous !== null) return { ok: false, reason: 'already_member' }
    if (expect === 'existing' && previous === null) return { ok: false, reason: 'not_member' }
    if (previous === change.role) return { ok: true, value: previous }
  }
  if (previous === 'owner' && members.filter((m) => m.role === 'owner').length <= 1) return { ok: false, reason: 'last_owner' }
  if (change.kind === 'remove') {
    yield* run(d.db.deleteFrom('members').where('vault_id', '=', vaultId).where('person_id', '=', personId))
    yield* insertLog(d, log)
  } else {
    yield* run(
      d.db
        .insertInto('members')
        .values({ vault_id: vaultId, person_id: personId, role: change.role })
        .onConflict((oc) => oc.columns(['vault_id', 'person_id']).doUpdateSet({ role: change.role })),
    )
    yield* insertLog(d, memberChangeEntry(log, previous))
  }
  return { ok: true, value: previous }
}

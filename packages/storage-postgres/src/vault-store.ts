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
  VaultSecrets,
  VaultStore,
} from '@envkeep/env-api-plugin'
import type { ImportStore } from '@envkeep/env-api-plugin'
import { memberChangeEntry, StorageError } from '@envkeep/env-api-plugin'
import { sql, type Kysely, type RawBuilder } from 'kysely'
import { inTransaction, read } from './database.js'
import { bytes, copy, insertLog, lockVault, record, rows, type VaultRow } from './rows.js'

export { insertLog, rows } from './rows.js'

type Q = Kysely<unknown>

/**
 * The vault store on PostgreSQL. Every changing method is one transaction that first locks
 * the vault's row (`select … for update`): changes of one vault are serialized, so the
 * rules checked in the transaction (last owner, limit, expect, sealedUnder) hold under any
 * number of concurrent writers in any number of processes; other vaults never wait.
 */
/** What the SQL core (@envkeep/storage-sql) answers of the vault store: the access log and the pushes. */
type SqlCoreMethods = 'appendAccessLog' | 'listAccessLog' | keyof ImportStore

export class PostgresVaultStore implements Omit<VaultStore, 'renameVault' | 'deleteVault' | 'listAudit' | 'setEnvironmentRules' | SqlCoreMethods> {
  readonly #db: Q

  constructor(db: Q) {
    this.#db = db
  }

  /** Locks the vault row; false when there is no such vault. */
  #lockVault(trx: Q, vaultId: string): Promise<{ wrapped_key: Buffer | null } | null> {
    return lockVault(trx, vaultId)
  }

  async #environments(db: Q, vaultIds: readonly string[]): Promise<Map<string, EnvironmentInfo[]>> {
    const out = new Map<string, EnvironmentInfo[]>()
    if (vaultIds.length === 0) return out
    const list = await rows<{ vault_id: string; name: string; owners_only: boolean; second_person: boolean }>(
      db,
      sql`select vault_id, name, owners_only, second_person from environments where vault_id = any(${[...vaultIds]}::text[]) order by vault_id, name collate "C"`,
    )
    for (const e of list) {
      const l = out.get(e.vault_id) ?? []
      l.push({ name: e.name, ownersOnly: e.owners_only, secondPerson: e.second_person })
      out.set(e.vault_id, l)
    }
    return out
  }

  async #access(where: RawBuilder<unknown>): Promise<VaultAccess[]> {
    // one round trip: the environments come along as a JSON array
    return read(async () => {
      const vs = await rows<VaultRow & { environments: EnvironmentInfo[] }>(
        this.#db,
        sql`select v.id, v.name, v.plan, v.require_second_person, v.created_at, m.role,
            coalesce((select jsonb_agg(jsonb_build_object('name', e.name, 'ownersOnly', e.owners_only, 'secondPerson', e.second_person) order by e.name collate "C") from environments e where e.vault_id = v.id), '[]'::jsonb) as environments
          from vaults v join members m on m.vault_id = v.id where ${where} order by v.name collate "C", v.id collate "C"`,
      )
      return vs.map((v) => ({ ...record(v), environments: v.environments, role: v.role! }))
    })
  }

  // ---- vaults and keys ----------------------------------------------------------

  createVault(input: NewVault, log: AccessLogEntry): Promise<VaultRecord> {
    return inTransaction(this.#db, async (trx) => {
      const [v] = await rows<VaultRow>(
        trx,
        sql`insert into vaults (id, name, plan, require_second_person, created_at) values (${input.id}, ${input.name}, ${input.plan}, false, ${input.now.getTime()})
          returning id, name, plan, require_second_person, created_at`,
      )
      await sql`insert into members (vault_id, person_id, role) values (${input.id}, ${input.ownerId}, 'owner')`.execute(trx)
      for (const e of input.environments) {
        await sql`insert into environments (vault_id, name, owners_only, second_person, version, created_at) values (${input.id}, ${e.name}, ${e.ownersOnly}, ${e.secondPerson ?? e.ownersOnly}, 0, ${input.now.getTime()})`.execute(
          trx,
        )
      }
      await insertLog(trx, log)
      return record(v!)
    })
  }

  getWrappedKey(vaultId: string): Promise<Uint8Array | null> {
    return read(async () => {
      const [r] = await rows<{ wrapped_key: Buffer | null }>(this.#db, sql`select wrapped_key from vaults where id = ${vaultId}`)
      return r?.wrapped_key ? copy(r.wrapped_key) : null
    })
  }

  ensureWrappedKey(vaultId: string, wrap: () => Promise<Uint8Array>): Promise<Uint8Array> {
    return inTransaction(this.#db, async (trx) => {
      const v = await this.#lockVault(trx, vaultId)
      if (!v) throw new StorageError('23503', 'vaults')
      if (v.wrapped_key) return copy(v.wrapped_key)
      const wrapped = copy(await wrap()) // under the row lock: no rotation commits meanwhile
      await sql`update vaults set wrapped_key = ${bytes(wrapped)} where id = ${vaultId}`.execute(trx)
      return copy(wrapped)
    })
  }

  rewrapKeys(rewrap: (wrapped: Uint8Array, vaultId: string) => Promise<Uint8Array>): Promise<number> {
    return inTransaction(this.#db, async (trx) => {
      // every vault row locked for the whole rotation: no key is created or changed meanwhile
      const all = await rows<{ id: string; wrapped_key: Buffer | null }>(trx, sql`select id, wrapped_key from vaults order by id collate "C" for update`)
      let n = 0
      for (const v of all) {
        if (!v.wrapped_key) continue
        const next = await rewrap(copy(v.wrapped_key), v.id)
        await sql`update vaults set wrapped_key = ${bytes(next)} where id = ${v.id}`.execute(trx)
        n++
      }
      return n
    })
  }

  resealVault(vaultId: string, reseal: (current: VaultSecrets) => Promise<VaultSecrets>): Promise<boolean> {
    return inTransaction(this.#db, async (trx) => {
      const v = await this.#lockVault(trx, vaultId)
      if (!v?.wrapped_key) return false
      const variables = (
        await rows<{ environment: string; name: string; sealed: Buffer }>(trx, sql`select environment, name, sealed from variables where vault_id = ${vaultId}`)
      ).map((r) => ({
        environment: r.environment,
        name: r.name,
        sealed: copy(r.sealed),
      }))
      const staged = (
        await rows<{ import_id: string; environment: string; name: string; sealed: Buffer }>(
          trx,
          sql`select v.import_id, i.environment, v.name, v.sealed from import_values v join imports i on i.id = v.import_id where i.vault_id = ${vaultId} and i.status = 'pending'`,
        )
      ).map((r) => ({ importId: r.import_id, environment: r.environment, name: r.name, sealed: copy(r.sealed) }))
      const kept = await rows<{ change_set_id: string; environment: string; name: string; before: Buffer | null; after: Buffer | null }>(
        trx,
        sql`select c.id as change_set_id, c.environment, e.name, e.before, e.after from change_entries e join change_sets c on c.seq = e.change_set_seq where c.vault_id = ${vaultId}`,
      )
      const history = kept.flatMap((h) => [
        ...(h.before ? [{ changeSetId: h.change_set_id, environment: h.environment, name: h.name, side: 'before' as const, sealed: copy(h.before) }] : []),
        ...(h.after ? [{ changeSetId: h.change_set_id, environment: h.environment, name: h.name, side: 'after' as const, sealed: copy(h.after) }] : []),
      ])
      const webhooks = (
        await rows<{ id: string; sealed_secret: Buffer }>(
          trx,
          sql`select id, sealed_secret from webhooks where vault_id = ${vaultId} and sealed_secret is not null`,
        )
      ).map((r) => ({ webhookId: r.id, sealed: copy(r.sealed_secret) }))
      const overrides = (
        await rows<{ environment: string; name: string; person_id: string; sealed: Buffer }>(
          trx,
          sql`select environment, name, person_id, sealed from overrides where vault_id = ${vaultId}`,
        )
      ).map((r) => ({ environment: r.environment, name: r.name, personId: r.person_id, sealed: copy(r.sealed) }))
      const next = await reseal({ wrappedKey: copy(v.wrapped_key), variables, staged, history, webhooks, overrides })
      for (const n of next.overrides ?? []) {
        const r = await sql`update overrides set sealed = ${bytes(n.sealed)}
          where vault_id = ${vaultId} and environment = ${n.environment} and name = ${n.name} and person_id = ${n.personId}`.execute(trx)
        if (Number(r.numAffectedRows ?? 0) !== 1) throw new StorageError('23503', 'overrides')
      }
      for (const n of next.webhooks ?? []) {
        const r =
          await sql`update webhooks set sealed_secret = ${bytes(n.sealed)} where id = ${n.webhookId} and vault_id = ${vaultId} and sealed_secret is not null`.execute(
            trx,
          )
        if (Number(r.numAffectedRows ?? 0) !== 1) throw new StorageError('23503', 'webhooks')
      }
      await sql`update vaults set wrapped_key = ${bytes(next.wrappedKey)} where id = ${vaultId}`.execute(trx)
      for (const n of next.variables) {
        const r =
          await sql`update variables set sealed = ${bytes(n.sealed)} where vault_id = ${vaultId} and environment = ${n.environment} and name = ${n.name}`.execute(
            trx,
          )
        if (Number(r.numAffectedRows ?? 0) !== 1) throw new StorageError('23503', 'variables')
      }
      for (const n of next.staged) {
        const r = await sql`update import_values set sealed = ${bytes(n.sealed)} where import_id = ${n.importId} and name = ${n.name}`.execute(trx)
        if (Number(r.numAffectedRows ?? 0) !== 1) throw new StorageError('23503', 'import_values')
      }
      for (const n of next.history) {
        const r = await sql`update change_entries set ${sql.ref(n.side)} = ${bytes(n.sealed)}
          where name = ${n.name} and ${sql.ref(n.side)} is not null
            and change_set_seq = (select seq from change_sets where id = ${n.changeSetId} and vault_id = ${vaultId})`.execute(trx)
        if (Number(r.numAffectedRows ?? 0) !== 1) throw new StorageError('23503', 'change_entries')
      }
      await sql`update environments set version = version + 1 where vault_id = ${vaultId}`.execute(trx)
      return true
    })
  }

  listVaults(personId: string): Promise<VaultAccess[]> {
    return this.#access(sql`m.person_id = ${personId}`)
  }

  async getVault(vaultId: string, personId: string): Promise<VaultAccess | null> {
    return (await this.#access(sql`m.person_id = ${personId} and v.id = ${vaultId}`))[0] ?? null
  }

  findVaults(filter: { readonly id: string } | { readonly name: string } | Record<string, never>): Promise<VaultInfo[]> {
    return read(async () => {
      const where = 'id' in filter ? sql`where id = ${filter.id}` : 'name' in filter ? sql`where name = ${filter.name}` : sql``
      const vs = await rows<VaultRow>(this.#db, sql`select id, name, plan, require_second_person, created_at from vaults ${where} order by id collate "C"`)
      const envs = await this.#environments(
        this.#db,
        vs.map((v) => v.id),
      )
      return vs.map((v) => ({ ...record(v), environments: envs.get(v.id) ?? [] }))
    })
  }

  // ---- environments and members -----------------------------------------------

  createEnvironment(input: NewEnvironment, log: AccessLogEntry): Promise<CreateEnvironmentResult> {
    return inTransaction(this.#db, async (trx): Promise<CreateEnvironmentResult> => {
      if (!(await this.#lockVault(trx, input.vaultId))) throw new StorageError('23503', 'environments')
      const exists = await rows(trx, sql`select 1 from environments where vault_id = ${input.vaultId} and name = ${input.name}`)
      if (exists.length > 0) return { ok: false, reason: 'exists' }
      await sql`insert into environments (vault_id, name, owners_only, second_person, version, created_at) values (${input.vaultId}, ${input.name}, ${input.ownersOnly}, ${input.secondPerson ?? input.ownersOnly}, 0, ${input.now.getTime()})`.execute(
        trx,
      )
      await insertLog(trx, log)
      return { ok: true }
    })
  }

  setMember(change: MemberChange, log: AccessLogEntry): Promise<SetMemberResult> {
    return inTransaction(this.#db, async (trx): Promise<SetMemberResult> => {
      if (!(await this.#lockVault(trx, change.vaultId))) throw new StorageError('23503', 'members')
      const members = await rows<{ person_id: string; role: Role }>(trx, sql`select person_id, role from members where vault_id = ${change.vaultId}`)
      const previous = members.find((m) => m.person_id === change.personId)?.role ?? null
      const expect = change.expect ?? 'any'
      if (expect === 'new' && previous !== null) return { ok: false, reason: 'already_member' }
      if (expect === 'existing' && previous === null) return { ok: false, reason: 'not_member' }
      if (previous === change.role) return { ok: true, previous }
      const owners = members.filter((m) => m.role === 'owner').length
      if (previous === 'owner' && owners <= 1) return { ok: false, reason: 'last_owner' }
      await sql`insert into members (vault_id, person_id, role) values (${change.vaultId}, ${change.personId}, ${change.role})
        on conflict (vault_id, person_id) do update set role = excluded.role`.execute(trx)
      await insertLog(trx, memberChangeEntry(log, previous))
      return { ok: true, previous }
    })
  }

  removeMember(input: { readonly vaultId: string; readonly personId: string }, log: AccessLogEntry): Promise<RemoveMemberResult> {
    return inTransaction(this.#db, async (trx): Promise<RemoveMemberResult> => {
      if (!(await this.#lockVault(trx, input.vaultId))) return { ok: false, reason: 'not_member' }
      const members = await rows<{ person_id: string; role: Role }>(trx, sql`select person_id, role from members where vault_id = ${input.vaultId}`)
      const previous = members.find((m) => m.person_id === input.personId)?.role
      if (!previous) return { ok: false, reason: 'not_member' }
      if (previous === 'owner' && members.filter((m) => m.role === 'owner').length <= 1) return { ok: false, reason: 'last_owner' }
      await sql`delete from members where vault_id = ${input.vaultId} and person_id = ${input.personId}`.execute(trx)
      await insertLog(trx, log)
      return { ok: true, previous }
    })
  }

  listMembers(vaultId: string): Promise<{ personId: string; role: Role }[]> {
    return read(async () =>
      (
        await rows<{ person_id: string; role: Role }>(
          this.#db,
          sql`select person_id, role from members where vault_id = ${vaultId} order by person_id collate "C"`,
        )
      ).map((m) => ({
        personId: m.person_id,
        role: m.role,
      })),
    )
  }
}

import type {
  AccessLogEntry,
  ChangeEntry,
  ChangeSetDetail,
  ChangeSetSummary,
  ChangeVariablesResult,
  HistoryStore,
  NewChangeSet,
  SealedVariable,
  VariablesChange,
  VariableVersion,
} from '@envkeep/env-api-plugin'
import { StorageError, storageLimitRefusal } from '@envkeep/env-api-plugin'
import { sql, type Kysely } from 'kysely'
import { inTransaction, read } from './database.js'
import { bytes, copy, insertLog, ms, rows, usageOf } from './rows.js'

type Q = Kysely<unknown>

interface SetRow {
  seq: string
  id: string
  vault_id: string
  environment: string
  at: string
  by: string | null
  how: ChangeSetSummary['how']
  ref: string | null
}

interface EntryRow {
  change_set_seq: string
  name: string
  kind: ChangeEntry['kind']
  before: Buffer | null
  after: Buffer | null
}

function entryOf(r: EntryRow): ChangeEntry {
  return { name: r.name, kind: r.kind, before: r.before && copy(r.before), after: r.after && copy(r.after) }
}

function summaryOf(r: SetRow, entries: readonly { name: string; kind: ChangeEntry['kind'] }[]): ChangeSetSummary {
  const names = (kind: ChangeEntry['kind']) => entries.filter((e) => e.kind === kind).map((e) => e.name)
  return {
    id: r.id,
    seq: Number(r.seq),
    vaultId: r.vault_id,
    environment: r.environment,
    at: new Date(ms(r.at)),
    by: r.by,
    how: r.how,
    ref: r.ref,
    added: names('added'),
    changed: names('changed'),
    deleted: names('deleted'),
  }
}

/** Inserts a change set and its entries in the transaction `trx` (nothing for one with no entry). */
export async function insertChangeSet(trx: Q, c: NewChangeSet): Promise<void> {
  if (c.entries.length === 0) return
  const [r] = await rows<{ seq: string }>(
    trx,
    sql`insert into change_sets (id, vault_id, environment, at, by, how, ref) values (${c.id}, ${c.vaultId}, ${c.environment}, ${c.at.getTime()}, ${c.by}, ${c.how}, ${c.ref}) returning seq`,
  )
  for (const e of c.entries) {
    await sql`insert into change_entries (change_set_seq, name, kind, before, after)
      values (${r?.seq}, ${e.name}, ${e.kind}, ${e.before && bytes(e.before)}, ${e.after && bytes(e.after)})`.execute(trx)
  }
}

/**
 * The history store on PostgreSQL (history-store.ts in the plugin). A change locks the
 * vault's row first, as every change of the vault store does, so the version check and
 * the write are one step for every process.
 */
export class PostgresHistoryStore implements HistoryStore {
  readonly #db: Q

  constructor(db: Q) {
    this.#db = db
  }

  async #summaries(db: Q, sets: SetRow[]): Promise<ChangeSetSummary[]> {
    if (sets.length === 0) return []
    const seqs = sets.map((s) => s.seq)
    const entries = await rows<{ change_set_seq: string; name: string; kind: ChangeEntry['kind'] }>(
      db,
      sql`select change_set_seq, name, kind from change_entries where change_set_seq = any(${seqs}::bigint[]) order by change_set_seq, name collate "C"`,
    )
    const by = new Map<string, { name: string; kind: ChangeEntry['kind'] }[]>()
    for (const e of entries) by.set(String(e.change_set_seq), [...(by.get(String(e.change_set_seq)) ?? []), e])
    return sets.map((s) => summaryOf(s, by.get(String(s.seq)) ?? []))
  }

  readCurrent(vaultId: string, environment: string, names?: readonly string[]): Promise<{ version: number; variables: SealedVariable[] }> {
    // one statement: the version and the values are of the same moment
    return read(async () => {
      const r = await rows<{ version: number | null; name: string | null; sealed: Buffer | null }>(
        this.#db,
        sql`select e.version, v.name, v.sealed from environments e left join variables v on v.vault_id = e.vault_id and v.environment = e.name
              ${names === undefined ? sql`` : sql`and v.name = any(${[...names]}::text[])`}
            where e.vault_id = ${vaultId} and e.name = ${environment} order by v.name collate "C"`,
      )
      return {
        version: Number(r[0]?.version ?? 0),
        variables: r.filter((x) => x.name !== null && x.sealed !== null).map((x) => ({ name: x.name as string, sealed: copy(x.sealed as Buffer) })),
      }
    })
  }

  changeVariables(change: VariablesChange, log: AccessLogEntry): Promise<ChangeVariablesResult> {
    const { vaultId, environment } = change
    return inTransaction(this.#db, async (trx): Promise<ChangeVariablesResult> => {
      const [vault] = await rows<{ wrapped_key: Buffer | null }>(trx, sql`select wrapped_key from vaults where id = ${vaultId} for update`)
      const [env] = await rows<{ version: number }>(trx, sql`select version from environments where vault_id = ${vaultId} and name = ${environment}`)
      if (!vault || !env) throw new StorageError('23503', 'variables_environment')
      if (Number(env.version) !== change.ifVersion) return { ok: false, reason: 'changed' }
      if (change.sealedUnder && !vault.wrapped_key?.equals(bytes(change.sealedUnder))) return { ok: false, reason: 'stale_key' }
      const touched = [...change.set.map((v) => v.name), ...change.delete]
      const sizes = new Map(
        (
          await rows<{ name: string; size: number }>(
            trx,
            sql`select name, length(sealed) as size from variables where vault_id = ${vaultId} and environment = ${environment} and name = any(${touched}::text[])`,
          )
        ).map((r) => [r.name, Number(r.size)]),
      )
      const before = await usageOf(trx, vaultId)
      const after = { ...before }
      for (const v of change.set) {
        after.n += sizes.has(v.name) ? 0 : 1
        after.bytes += v.sealed.byteLength - (sizes.get(v.name) ?? 0)
      }
      for (const name of change.delete) {
        if (!sizes.has(name)) return { ok: false, reason: 'changed' }
        after.n -= 1
        after.bytes -= sizes.get(name) as number
      }
      const over = storageLimitRefusal(before, after, change.limit)
      if (over) return over
      const at = change.now.getTime()
      for (const v of change.set) {
        await sql`insert into variables (vault_id, environment, name, sealed, updated_at, updated_by) values (${vaultId}, ${environment}, ${v.name}, ${bytes(v.sealed)}, ${at}, ${change.by})
          on conflict (vault_id, environment, name) do update set sealed = excluded.sealed, updated_at = excluded.updated_at, updated_by = excluded.updated_by`.execute(
          trx,
        )
      }
      if (change.delete.length > 0)
        await sql`delete from variables where vault_id = ${vaultId} and environment = ${environment} and name = any(${[...change.delete]}::text[])`.execute(trx)
      await insertChangeSet(trx, { ...change.changeSet, at: change.now })
      await sql`update environments set version = version + 1 where vault_id = ${vaultId} and name = ${environment}`.execute(trx)
      await insertLog(trx, log)
      return { ok: true, version: Number(env.version) + 1 }
    })
  }

  listChangeSets(vaultId: string, filter: { environment?: string; ref?: string; limit: number; beforeSeq?: number }): Promise<ChangeSetSummary[]> {
    return read(async () => {
      const sets = await rows<SetRow>(
        this.#db,
        sql`select seq, id, vault_id, environment, at, by, how, ref from change_sets where vault_id = ${vaultId}
          ${filter.environment !== undefined ? sql`and environment = ${filter.environment}` : sql``}
          ${filter.ref !== undefined ? sql`and ref = ${filter.ref}` : sql``}
          ${filter.beforeSeq !== undefined ? sql`and seq < ${filter.beforeSeq}` : sql``}
          order by seq desc limit ${Math.max(0, Math.trunc(filter.limit))}`,
      )
      return this.#summaries(this.#db, sets)
    })
  }

  getChangeSet(vaultId: string, changeSetId: string): Promise<ChangeSetDetail | null> {
    return read(async () => {
      const [set] = await rows<SetRow>(
        this.#db,
        sql`select seq, id, vault_id, environment, at, by, how, ref from change_sets where id = ${changeSetId} and vault_id = ${vaultId}`,
      )
      if (!set) return null
      const entries = (
        await rows<EntryRow>(
          this.#db,
          sql`select change_set_seq, name, kind, before, after from change_entries where change_set_seq = ${set.seq} order by name collate "C"`,
        )
      ).map(entryOf)
      return { ...summaryOf(set, entries), entries }
    })
  }

  listVersions(vaultId: string, environment: string, name: string, filter: { limit: number }): Promise<VariableVersion[]> {
    return read(async () => {
      const found = await rows<SetRow & EntryRow>(
        this.#db,
        sql`select c.seq, c.id, c.vault_id, c.environment, c.at, c.by, c.how, c.ref, e.change_set_seq, e.name, e.kind, e.before, e.after
          from change_sets c join change_entries e on e.change_set_seq = c.seq
          where c.vault_id = ${vaultId} and c.environment = ${environment} and e.name = ${name}
          order by c.seq desc limit ${Math.max(0, Math.trunc(filter.limit))}`,
      )
      const summaries = await this.#summaries(this.#db, found)
      return summaries.map((changeSet, i) => ({ changeSet, entry: entryOf(found[i] as EntryRow) }))
    })
  }

  firstChangesAfter(vaultId: string, environment: string, afterSeq: number): Promise<{ name: string; changeSetId: string; entry: ChangeEntry }[]> {
    return read(async () => {
      const found = await rows<EntryRow & { change_set_id: string }>(
        this.#db,
        sql`select distinct on (e.name) c.id as change_set_id, e.change_set_seq, e.name, e.kind, e.before, e.after
          from change_entries e join change_sets c on c.seq = e.change_set_seq
          where c.vault_id = ${vaultId} and c.environment = ${environment} and c.seq > ${afterSeq}
          order by e.name, c.seq`,
      )
      return found
        .map((r) => ({ name: r.name, changeSetId: r.change_set_id, entry: entryOf(r) }))
        .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    })
  }

  pruneHistory(olderThan: Date, keep: number): Promise<number> {
    return inTransaction(this.#db, async (trx) => {
      const r = await sql`delete from change_entries where (change_set_seq, name) in (
          select change_set_seq, name from (
            select e.change_set_seq, e.name, c.at,
                   row_number() over (partition by c.vault_id, c.environment, e.name order by c.seq desc) as newer
            from change_entries e join change_sets c on c.seq = e.change_set_seq) ranked
          where newer > ${Math.max(0, Math.trunc(keep))} and at < ${olderThan.getTime()})`.execute(trx)
      await sql`delete from change_sets c where not exists (select 1 from change_entries e where e.change_set_seq = c.seq)`.execute(trx)
      return Number(r.numAffectedRows ?? 0)
    })
  }
}

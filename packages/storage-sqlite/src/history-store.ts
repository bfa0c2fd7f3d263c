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
import type { OpenDatabase } from './database.js'
import { prepared, usageOf } from './limits.js'
import { runSync } from './sqlite-errors.js'
import { INSERT_LOG_SQL, logParams } from './vault-store.js'

/** The history store on SQLite (history-store.ts in the plugin): tables change_sets and change_entries (migration 006). */
export function createSqliteHistoryStore(d: OpenDatabase): HistoryStore {
  return new SqliteHistoryStore(d)
}

interface SetRow {
  seq: number
  id: string
  vault_id: string
  environment: string
  at: number
  by: string | null
  how: ChangeSetSummary['how']
  ref: string | null
}

interface EntryRow {
  change_set_seq: number
  name: string
  kind: ChangeEntry['kind']
  before: Buffer | null
  after: Buffer | null
}

const SET_COLUMNS = 'c.seq, c.id, c.vault_id, c.environment, c.at, c.by, c.how, c.ref'
const ENTRY_COLUMNS = 'e.change_set_seq, e.name, e.kind, e.before, e.after'

function bytes(u: Uint8Array): Buffer {
  return Buffer.isBuffer(u) ? u : Buffer.from(u.buffer, u.byteOffset, u.byteLength)
}

function entryOf(r: EntryRow): ChangeEntry {
  return { name: r.name, kind: r.kind, before: r.before, after: r.after }
}

function summaryOf(r: SetRow, entries: readonly { name: string; kind: ChangeEntry['kind'] }[]): ChangeSetSummary {
  const names = (kind: ChangeEntry['kind']) => entries.filter((e) => e.kind === kind).map((e) => e.name)
  return {
    id: r.id,
    seq: r.seq,
    vaultId: r.vault_id,
    environment: r.environment,
    at: new Date(r.at),
    by: r.by,
    how: r.how,
    ref: r.ref,
    added: names('added'),
    changed: names('changed'),
    deleted: names('deleted'),
  }
}

/** Inserts a change set and its entries inside the caller's transaction (nothing for one with no entry). */
export function insertChangeSet(d: OpenDatabase, c: NewChangeSet): void {
  if (c.entries.length === 0) return
  const { seq } = prepared(d, 'insert into change_sets (id, vault_id, environment, at, by, how, ref) values (?, ?, ?, ?, ?, ?, ?) returning seq').get(
    c.id,
    c.vaultId,
    c.environment,
    c.at.getTime(),
    c.by,
    c.how,
    c.ref,
  ) as { seq: number }
  const insert = prepared(d, 'insert into change_entries (change_set_seq, name, kind, before, after) values (?, ?, ?, ?, ?)')
  for (const e of c.entries) insert.run(seq, e.name, e.kind, e.before && bytes(e.before), e.after && bytes(e.after))
}

class SqliteHistoryStore implements HistoryStore {
  readonly #d: OpenDatabase

  constructor(d: OpenDatabase) {
    this.#d = d
  }

  #q(text: string) {
    return prepared(this.#d, text)
  }

  /** Summaries of change-set rows, with the names of their entries (one query for all). */
  #summaries(rows: SetRow[]): ChangeSetSummary[] {
    if (rows.length === 0) return []
    const seqs = rows.map((r) => r.seq)
    const entries = this.#d.sqlite
      .prepare(
        `select change_set_seq, name, kind from change_entries where change_set_seq in (${seqs.map(() => '?').join(', ')}) order by change_set_seq, name`,
      )
      .all(...seqs) as { change_set_seq: number; name: string; kind: ChangeEntry['kind'] }[]
    const by = new Map<number, { name: string; kind: ChangeEntry['kind'] }[]>()
    for (const e of entries) by.set(e.change_set_seq, [...(by.get(e.change_set_seq) ?? []), e])
    return rows.map((r) => summaryOf(r, by.get(r.seq) ?? []))
  }

  readCurrent(vaultId: string, environment: string, names?: readonly string[]): Promise<{ version: number; variables: SealedVariable[] }> {
    return runSync(
      this.#d,
      'deferred',
      () => {
        const v = this.#q('select version from environments where vault_id = ? and name = ?').get(vaultId, environment) as { version: number } | undefined
        const all = this.#q('select name, sealed from variables where vault_id = ? and environment = ? order by name').all(
          vaultId,
          environment,
        ) as SealedVariable[]
        const wanted = names === undefined ? null : new Set(names)
        return { version: v?.version ?? 0, variables: wanted ? all.filter((r) => wanted.has(r.name)) : all }
      },
      'variables',
    )
  }

  changeVariables(change: VariablesChange, log: AccessLogEntry): Promise<ChangeVariablesResult> {
    const { vaultId, environment } = change
    return runSync(
      this.#d,
      'immediate',
      (): ChangeVariablesResult => {
        const env = this.#q('select version from environments where vault_id = ? and name = ?').get(vaultId, environment) as { version: number } | undefined
        if (!env) throw new StorageError('23503', 'variables_environment')
        if (env.version !== change.ifVersion) return { ok: false, reason: 'changed' }
        if (change.sealedUnder) {
          const k = this.#q('select wrapped_key from vaults where id = ?').get(vaultId) as { wrapped_key: Buffer | null } | undefined
          if (!k?.wrapped_key?.equals(bytes(change.sealedUnder))) return { ok: false, reason: 'stale_key' }
        }
        const one = this.#q('select length(sealed) as size from variables where vault_id = ? and environment = ? and name = ?')
        const before = usageOf(this.#d, vaultId)
        const after = { ...before }
        for (const v of change.set) {
          const old = one.get(vaultId, environment, v.name) as { size: number } | undefined
          after.n += old ? 0 : 1
          after.bytes += v.sealed.byteLength - (old?.size ?? 0)
        }
        for (const name of change.delete) {
          const old = one.get(vaultId, environment, name) as { size: number } | undefined
          if (!old) return { ok: false, reason: 'changed' }
          after.n -= 1
          after.bytes -= old.size
        }
        const over = storageLimitRefusal(before, after, change.limit)
        if (over) return over
        const at = change.now.getTime()
        const upsert = this.#q(
          'insert into variables (vault_id, environment, name, sealed, updated_at, updated_by) values (?, ?, ?, ?, ?, ?) on conflict (vault_id, environment, name) do update set sealed = excluded.sealed, updated_at = excluded.updated_at, updated_by = excluded.updated_by',
        )
        for (const v of change.set) upsert.run(vaultId, environment, v.name, bytes(v.sealed), at, change.by)
        const del = this.#q('delete from variables where vault_id = ? and environment = ? and name = ?')
        for (const name of change.delete) del.run(vaultId, environment, name)
        insertChangeSet(this.#d, { ...change.changeSet, at: change.now })
        this.#q('update environments set version = version + 1 where vault_id = ? and name = ?').run(vaultId, environment)
        this.#q(INSERT_LOG_SQL).run(...logParams(log))
        return { ok: true, version: env.version + 1 }
      },
      'variables',
    )
  }

  listChangeSets(vaultId: string, filter: { environment?: string; ref?: string; limit: number; beforeSeq?: number }): Promise<ChangeSetSummary[]> {
    return runSync(
      this.#d,
      'deferred',
      () => {
        const where = ['c.vault_id = ?']
        const args: unknown[] = [vaultId]
        if (filter.environment !== undefined) {
          where.push('c.environment = ?')
          args.push(filter.environment)
        }
        if (filter.ref !== undefined) {
          where.push('c.ref = ?')
          args.push(filter.ref)
        }
        if (filter.beforeSeq !== undefined) {
          where.push('c.seq < ?')
          args.push(filter.beforeSeq)
        }
        args.push(Math.max(0, Math.trunc(filter.limit)))
        const rows = this.#q(`select ${SET_COLUMNS} from change_sets c where ${where.join(' and ')} order by c.seq desc limit ?`).all(...args) as SetRow[]
        return this.#summaries(rows)
      },
      'change_sets',
    )
  }

  getChangeSet(vaultId: string, changeSetId: string): Promise<ChangeSetDetail | null> {
    return runSync(
      this.#d,
      'deferred',
      () => {
        const r = this.#q(`select ${SET_COLUMNS} from change_sets c where c.id = ? and c.vault_id = ?`).get(changeSetId, vaultId) as SetRow | undefined
        if (!r) return null
        const entries = (this.#q(`select ${ENTRY_COLUMNS} from change_entries e where e.change_set_seq = ? order by e.name`).all(r.seq) as EntryRow[]).map(
          entryOf,
        )
        return { ...summaryOf(r, entries), entries }
      },
      'change_sets',
    )
  }

  listVersions(vaultId: string, environment: string, name: string, filter: { limit: number }): Promise<VariableVersion[]> {
    return runSync(
      this.#d,
      'deferred',
      () => {
        const rows = this.#q(
          `select ${SET_COLUMNS} from change_sets c join change_entries e on e.change_set_seq = c.seq where c.vault_id = ? and c.environment = ? and e.name = ? order by c.seq desc limit ?`,
        ).all(vaultId, environment, name, Math.max(0, Math.trunc(filter.limit))) as SetRow[]
        const summaries = this.#summaries(rows)
        const entry = this.#q(`select ${ENTRY_COLUMNS} from change_entries e where e.change_set_seq = ? and e.name = ?`)
        return summaries.map((changeSet) => ({ changeSet, entry: entryOf(entry.get(changeSet.seq, name) as EntryRow) }))
      },
      'change_sets',
    )
  }

  firstChangesAfter(vaultId: string, environment: string, afterSeq: number): Promise<{ name: string; changeSetId: string; entry: ChangeEntry }[]> {
    return runSync(
      this.#d,
      'deferred',
      () => {
        const rows = this.#q(
          `select c.id as change_set_id, ${ENTRY_COLUMNS} from change_entries e join change_sets c on c.seq = e.change_set_seq
           where c.vault_id = ? and c.environment = ? and c.seq > ?
             and c.seq = (select min(c2.seq) from change_sets c2 join change_entries e2 on e2.change_set_seq = c2.seq
                          where c2.vault_id = c.vault_id and c2.environment = c.environment and c2.seq > ? and e2.name = e.name)
           order by e.name`,
        ).all(vaultId, environment, afterSeq, afterSeq) as (EntryRow & { change_set_id: string })[]
        return rows.map((r) => ({ name: r.name, changeSetId: r.change_set_id, entry: entryOf(r) }))
      },
      'change_sets',
    )
  }

  pruneHistory(olderThan: Date, keep: number): Promise<number> {
    return runSync(
      this.#d,
      'immediate',
      () => {
        const { changes } = this.#q(
          `delete from change_entries where (change_set_seq, name) in (
             select change_set_seq, name from (
               select e.change_set_seq, e.name, c.at,
                      row_number() over (partition by c.vault_id, c.environment, e.name order by c.seq desc) as newer
               from change_entries e join change_sets c on c.seq = e.change_set_seq)
             where newer > ? and at < ?)`,
        ).run(Math.max(0, Math.trunc(keep)), olderThan.getTime())
        this.#q('delete from change_sets where not exists (select 1 from change_entries e where e.change_set_seq = change_sets.seq)').run()
        return changes
      },
      'change_entries',
    )
  }
}

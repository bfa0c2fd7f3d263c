import type { OpenDatabase } from '@envkeep/storage-sqlite'
import { sql, type Kysely, type Transaction } from 'kysely'
import { encodeValue } from './backup-file.js'

/**
 * Copies every table of an envkeep database into a backup and back, between SQLite and
 * PostgreSQL in either direction. Tables are found in the database itself (not a fixed
 * list), so tables added by later features are backed up without touching this file;
 * migration bookkeeping is left out (the target's own migrations made its schema).
 */

/**
 * Tables not worth carrying: counters that restart anyway (the change counter of issue 20 is
 * made by each database's migration), and what is derived from other tables (the staged usage
 * of issue 20: rebuilt from the restored pushes by `REBUILT`).
 */
const EPHEMERAL = new Set(['rate_counters', 'envkeep_changes', 'staged_usage'])

/** Derived tables made again from the rows just loaded, in the load's transaction (the same SQL on both databases). */
const REBUILT = [
  'delete from staged_usage',
  `insert into staged_usage (vault_id, values_count, bytes)
    select i.vault_id, count(*), sum(length(iv.sealed)) from import_values iv join imports i on i.id = iv.import_id
    where i.status = 'pending' group by i.vault_id`,
]
const SKIP = (name: string) => name.startsWith('sqlite_') || /migration/.test(name) || EPHEMERAL.has(name)

type SqliteHandle = OpenDatabase['sqlite']
type Statement = ReturnType<SqliteHandle['prepare']>

export type Source = { kind: 'sqlite'; sqlite: SqliteHandle } | { kind: 'postgres'; db: Kysely<unknown> }

/** Where a dump goes: a backup file, or (for \`migrate\`) straight into another database's loader. */
export interface DumpSink {
  table(name: string, columns: readonly string[]): void | Promise<void>
  row(values: readonly unknown[]): void | Promise<void>
}

/**
 * Writes every row of the source into the backup, from one consistent snapshot: on SQLite a
 * read transaction (WAL: the server's writers go on, the reader sees the database as it was
 * at its first read); on PostgreSQL one REPEATABLE READ, READ ONLY transaction.
 */
export async function dumpDatabase(source: Source, out: DumpSink): Promise<void> {
  if (source.kind === 'sqlite') {
    const s = source.sqlite
    s.prepare('begin').run()
    try {
      const tables = (s.prepare(`select name from sqlite_master where type = 'table' order by name`).all() as { name: string }[])
        .map((r) => r.name)
        .filter((n) => !SKIP(n))
      for (const table of tables) {
        const stmt = s.prepare(`select * from "${table.replace(/"/g, '""')}"`).raw(true)
        const columns = stmt.columns().map((c) => c.name)
        await out.table(table, columns)
        for (const row of stmt.iterate() as Iterable<unknown[]>) {
          const wrote = out.row(row.map((v) => encodeValue(v, false)))
          if (wrote) await wrote // the iterator holds this connection only: a sink must not read the source
        }
      }
    } finally {
      s.prepare('commit').run()
    }
    return
  }
  await source.db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute(async (trx) => {
      await sql`set transaction read only`.execute(trx)
      const tables = (
        (
          await sql`select table_name as name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE' order by table_name`.execute(
            trx,
          )
        ).rows as { name: string }[]
      )
        .map((r) => r.name)
        .filter((n) => !SKIP(n))
      for (const table of tables) {
        const cols = await pgColumns(trx, table)
        await out.table(
          table,
          cols.map((c) => c.name),
        )
        const rows = (await sql`select * from ${sql.id(table)}`.execute(trx)).rows as Record<string, unknown>[]
        for (const r of rows) await out.row(cols.map((c) => encodeValue(r[c.name], c.type === 'jsonb' || c.type === 'json')))
      }
    })
}

interface PgColumn {
  readonly name: string
  readonly type: string
  readonly identity: boolean
}

async function pgColumns(db: Kysely<unknown> | Transaction<unknown>, table: string): Promise<PgColumn[]> {
  const r =
    await sql`select column_name as name, data_type as type, is_identity as identity from information_schema.columns where table_schema = current_schema() and table_name = ${table} order by ordinal_position`.execute(
      db,
    )
  return (r.rows as { name: string; type: string; identity: string }[]).map((c) => ({ name: c.name, type: c.type, identity: c.identity === 'YES' }))
}

type Encoded = null | string | number | boolean | { $b: string } | { $j: unknown } | unknown[]

function isBytes(v: unknown): v is { $b: string } {
  return typeof v === 'object' && v !== null && '$b' in v
}
function isJson(v: unknown): v is { $j: unknown } {
  return typeof v === 'object' && v !== null && '$j' in v
}

/** A value from the file for a PostgreSQL column of `type`. */
function toPostgres(v: Encoded, type: string, column: string): unknown {
  if (v === null) return null
  if (isBytes(v)) return Buffer.from(v.$b, 'base64')
  if (type === 'boolean') return v === true || v === 1 || v === '1'
  if (type === 'jsonb' || type === 'json') {
    if (isJson(v)) return JSON.stringify(v.$j)
    // SQLite keeps OAuth scopes as one space-separated string; PostgreSQL as a JSON array
    if (column === 'scopes' && typeof v === 'string' && !v.startsWith('[')) return JSON.stringify(v.split(' ').filter(Boolean))
    return typeof v === 'string' ? v : JSON.stringify(v)
  }
  if (isJson(v)) return JSON.stringify(v.$j)
  return v
}

/** A value from the file for a SQLite column declared as `type`. */
function toSqlite(v: Encoded, type: string, column: string): unknown {
  if (v === null) return null
  if (isBytes(v)) return Buffer.from(v.$b, 'base64')
  if (isJson(v)) return column === 'scopes' && Array.isArray(v.$j) ? v.$j.join(' ') : JSON.stringify(v.$j)
  if (typeof v === 'boolean') return v ? 1 : 0
  if (/int/i.test(type) && typeof v === 'string' && /^-?\d+$/.test(v)) {
    const n = Number(v)
    return Number.isSafeInteger(n) ? n : BigInt(v)
  }
  return v
}

export type Target = Source

/** Tables of the target that hold rows a restore must not mix with: it restores into an empty database only. */
export async function heldRows(target: Target): Promise<string[]> {
  const out: string[] = []
  for (const table of ['vaults', 'accounts', 'sign_ins', 'oauth_codes']) {
    let n = 0
    try {
      if (target.kind === 'sqlite') n = (target.sqlite.prepare(`select count(*) as n from "${table}"`).get() as { n: number }).n
      else n = Number(((await sql`select count(*) as n from ${sql.id(table)}`.execute(target.db)).rows[0] as { n: string }).n)
    } catch {
      continue
    }
    if (n > 0) out.push(`${n} ${table.replace('_', ' ')}`)
  }
  return out
}

export interface Loaded {
  /** rows written per table */
  readonly counts: Record<string, number>
  /** `table.column`s of the backup the target has no column for (left out, as \`migrate\` does) */
  readonly dropped: readonly string[]
}

export interface Loader {
  table(name: string, columns: readonly string[]): Promise<void>
  row(values: readonly unknown[]): Promise<void>
}

const BATCH = 200

/**
 * Inserts a backup's rows into the target inside `run`'s one transaction: all of it, or (on
 * any failure) none. On SQLite foreign keys are checked once at the end; on PostgreSQL the
 * rows are buffered per table and inserted parents first.
 */
export async function loadDatabase(target: Target, fill: (loader: Loader) => Promise<void>): Promise<Loaded> {
  const counts: Record<string, number> = {}
  const dropped: string[] = []
  if (target.kind === 'sqlite') {
    const s = target.sqlite
    type Col = { name: string; type: string; notnull: number; dflt_value: unknown; pk: number }
    const info = (table: string) => s.prepare(`select name, type, "notnull", dflt_value, pk from pragma_table_info(?)`).all(table) as Col[]
    const restoredAt = Date.now()
    s.pragma('foreign_keys = OFF')
    s.prepare('begin').run()
    try {
      let insert: Statement | null = null
      let types: string[] = []
      let columns: readonly string[] = []
      let keep: boolean[] = []
      let extra: Col[] = []
      let current = ''
      await fill({
        async table(name, cols) {
          if (EPHEMERAL.has(name)) {
            insert = null
            current = ''
            return
          }
          const cols0 = info(name)
          const have = new Map(cols0.map((c) => [c.name, c.type]))
          if (have.size === 0) throw new Error(`the target has no table ${name} (is it an older envkeep-server than the backup's?)`)
          for (const c of cols) if (!have.has(c)) dropped.push(`${name}.${c}`)
          keep = cols.map((c) => have.has(c))
          // a required column the source database does not have (a time SQLite keeps and PostgreSQL does not): the time of the restore
          extra = cols0.filter((c) => c.notnull === 1 && c.dflt_value === null && c.pk === 0 && !cols.includes(c.name))
          const unfillable = extra.filter((c) => !c.name.endsWith('_at'))
          if (unfillable.length > 0) throw new Error(`the backup has no value for ${name}.${unfillable[0]!.name}, which the target requires`)
          columns = [...cols.filter((c) => have.has(c)), ...extra.map((c) => c.name)]
          types = columns.map((c) => have.get(c) ?? '')
          current = name
          counts[name] = 0
          insert = s.prepare(`insert into "${name}" (${columns.map((c) => `"${c}"`).join(', ')}) values (${columns.map(() => '?').join(', ')})`)
        },
        async row(values) {
          if (!insert) return
          const row = [...values.filter((_v, i) => keep[i]), ...extra.map(() => restoredAt)]
          insert.run(row.map((v, i) => toSqlite(v as Encoded, types[i]!, columns[i]!)))
          counts[current]!++
        },
      })
      for (const statement of REBUILT) s.prepare(statement).run()
      const broken = s.prepare('pragma foreign_key_check').all()
      if (broken.length > 0) throw new Error(`${broken.length} rows refer to rows the backup does not hold`)
      s.prepare('commit').run()
    } catch (err) {
      if (s.inTransaction) s.prepare('rollback').run()
      throw err
    } finally {
      s.pragma('foreign_keys = ON')
    }
    return { counts, dropped }
  }

  const db = target.db
  // buffer everything, then insert parents before children
  const tables = new Map<string, { columns: readonly string[]; rows: unknown[][] }>()
  let current: { columns: readonly string[]; rows: unknown[][] } | null = null
  await fill({
    async table(name, cols) {
      current = EPHEMERAL.has(name) ? null : { columns: cols, rows: [] }
      if (current) tables.set(name, current)
    },
    async row(values) {
      current?.rows.push(values as unknown[])
    },
  })
  await db.transaction().execute(async (trx) => {
    const order = await parentsFirst(trx, [...tables.keys()])
    for (const name of order) {
      const t = tables.get(name)!
      const cols = await pgColumns(trx, name)
      if (cols.length === 0) throw new Error(`the target has no table ${name} (is it an older envkeep-server than the backup's?)`)
      const byName = new Map(cols.map((c) => [c.name, c]))
      for (const c of t.columns) if (!byName.has(c)) dropped.push(`${name}.${c}`)
      const keep = t.columns.map((c) => byName.has(c))
      const columns = t.columns.filter((c) => byName.has(c))
      const types = columns.map((c) => byName.get(c)!.type)
      const identity = cols.filter((c) => c.identity && columns.includes(c.name))
      const overriding = identity.length > 0 ? sql`overriding system value` : sql``
      for (let i = 0; i < t.rows.length; i += BATCH) {
        const rows = t.rows
          .slice(i, i + BATCH)
          .map((r) => sql`(${sql.join(r.filter((_v, j) => keep[j]).map((v, j) => sql`${toPostgres(v as Encoded, types[j]!, columns[j]!)}`))})`)
        await sql`insert into ${sql.id(name)} (${sql.join(columns.map((c) => sql.id(c)))}) ${overriding} values ${sql.join(rows)}`.execute(trx)
      }
      for (const c of identity)
        await sql`select setval(pg_get_serial_sequence(${name}, ${c.name}), coalesce((select max(${sql.id(c.name)}) from ${sql.id(name)}), 0) + 1, false)`.execute(
          trx,
        )
      counts[name] = t.rows.length
    }
    for (const statement of REBUILT) await sql.raw(statement).execute(trx)
  })
  return { counts, dropped }
}

/** The tables ordered so that every table comes after the tables its foreign keys refer to. */
async function parentsFirst(db: Transaction<unknown>, tables: readonly string[]): Promise<string[]> {
  const edges = (
    await sql`select c.relname as child, p.relname as parent from pg_constraint k join pg_class c on c.oid = k.conrelid join pg_class p on p.oid = k.confrelid where k.contype = 'f' and k.connamespace = current_schema()::regnamespace`.execute(
      db,
    )
  ).rows as { child: string; parent: string }[]
  const out: string[] = []
  const state = new Map<string, 'visiting' | 'done'>()
  const visit = (t: string) => {
    if (state.get(t) === 'done' || state.get(t) === 'visiting') return
    state.set(t, 'visiting')
    for (const e of edges) if (e.child === t && e.parent !== t && tables.includes(e.parent)) visit(e.parent)
    state.set(t, 'done')
    out.push(t)
  }
  for (const t of [...tables].sort()) visit(t)
  return out
}

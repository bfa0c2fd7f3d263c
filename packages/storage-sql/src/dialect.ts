import { type Kysely, type RawBuilder, type SelectQueryBuilder, sql } from 'kysely'
import { jsonArrayFrom as postgresJsonArray } from 'kysely/helpers/postgres'
import { jsonArrayFrom as sqliteJsonArray } from 'kysely/helpers/sqlite'
import type { Op } from './op.js'
import type { DB } from './schema.js'

/**
 * What differs between the SQL databases, as data the core's queries read.
 * Everything else (the queries, the rules they call, the row conversions)
 * is written once in this package.
 */
export interface SqlDialect {
  readonly name: 'sqlite' | 'postgres'
  /**
   * Builds (compiles) queries with this database's compiler. It is never
   * used to execute anything: the runner executes what operations yield.
   */
  readonly db: Kysely<DB>
  /**
   * Whether a write transaction must lock the rows it decides on
   * (`for update`, or `for no key update` for a vault's row: vault-lock.ts; PostgreSQL).
   * SQLite's write transaction already holds
   * the whole database (`BEGIN IMMEDIATE`).
   */
  readonly rowLocks: boolean
  /** A text column sorted by bytes (PostgreSQL: `collate "C"`), as the memory store sorts. */
  byBytes(column: string): RawBuilder<unknown>
}

/** Sorting by bytes, per dialect. */
export function byBytesFor(name: SqlDialect['name']): (column: string) => RawBuilder<unknown> {
  return name === 'postgres' ? (column) => sql`${sql.ref(column)} collate "C"` : (column) => sql`${sql.ref(column)}`
}

/**
 * The seam a SQL backend implements: how an operation runs. `read` runs it
 * outside a write transaction; `write` runs it as one transaction (retried
 * from the start where the database asks, so the thunk makes a new
 * generator each time), with every database failure thrown as a
 * `StorageError` carrying its SQLSTATE.
 */
export interface SqlRunner {
  readonly dialect: SqlDialect
  read<T>(op: () => Op<T>): Promise<T>
  /**
   * `oneStatement`: the operation runs exactly one statement, atomic by
   * itself, so a database that pays a round trip for BEGIN and COMMIT
   * (PostgreSQL) may run it without them. `lazyCommit` (with it): its commit
   * need not wait for the disk (PostgreSQL: synchronous_commit off); seen by
   * everyone once it answers, but a crash of the database moments later may
   * forget it. Only for the request counters, never for data or the log.
   */
  write<T>(op: () => Op<T>, options?: { readonly oneStatement?: boolean; readonly lazyCommit?: boolean }): Promise<T>
}

/**
 * A subquery's rows as one JSON array column (PostgreSQL `json_agg`, SQLite
 * `json_group_array`), so a list comes along in the same statement: one
 * round trip. SQLite answers it as JSON text and 0/1 booleans (read it with
 * `fromJson` and `isSet`).
 */
// biome-ignore lint/suspicious/noExplicitAny: any subquery of any tables (kysely's own helpers take the same)
export function jsonArray<O>(d: SqlDialect, q: SelectQueryBuilder<any, any, O>): RawBuilder<unknown> {
  return d.name === 'postgres' ? postgresJsonArray(q) : sqliteJsonArray(q)
}

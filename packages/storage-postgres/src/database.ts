import { StorageError } from '@envkeep/env-api-plugin'
import { Kysely, PostgresDialect, sql, type Transaction } from 'kysely'
import pg from 'pg'
import { migrateToLatest } from './migrations.js'

export interface PostgresOptions {
  /** `postgres://user:pass@host:port/db?sslmode=…` (TLS as sslmode says) */
  readonly connectionString: string
  /** pool size (default 10) */
  readonly pool?: number
  /** the spec's statement limit (default 10 000 ms): past it, 57014 statement timeout */
  readonly statementTimeoutMs?: number
  /** how long a statement waits for a row lock (default 5 000 ms): past it, 55P03 */
  readonly lockTimeoutMs?: number
  /** a schema of its own (created if absent), e.g. for several installations in one database */
  readonly schema?: string
}

export interface OpenPostgres {
  readonly db: Kysely<unknown>
  readonly pool: pg.Pool
  /**
   * A small pool whose commits do not wait for the disk (synchronous_commit=off), for the
   * request counters only (SqlRunner's `lazyCommit`): seen by every connection once committed,
   * but a crash of the database may forget the last fraction of a second of them.
   */
  readonly lazyPool: pg.Pool
  close(): Promise<void>
}

/** connections of the lazy pool: its statements are one per event-loop turn (the batched counts) */
const LAZY_POOL = 2

const SCHEMA_RE = /^[a-z_][a-z0-9_]{0,62}$/

/** Opens the pool (every connection with the statement and lock limits) and migrates the schema. */
export async function openPostgres(o: PostgresOptions): Promise<OpenPostgres> {
  if (o.schema !== undefined && !SCHEMA_RE.test(o.schema)) throw new TypeError('envkeep: schema must be a lower-case SQL identifier')
  const searchPath = o.schema ? [`-c search_path=${o.schema}`] : []
  // Migrations run on a connection of their own, without the statement limit meant for
  // requests: rebuilding an index on a big table may take longer, and must not fail a start.
  const migrating = new Kysely<unknown>({
    dialect: new PostgresDialect({
      pool: new pg.Pool({
        connectionString: o.connectionString,
        max: 1,
        options: [...searchPath, '-c statement_timeout=0', '-c lock_timeout=60000'].join(' '),
        application_name: 'envkeep',
      }),
    }),
  })
  try {
    if (o.schema) await run(() => sql`create schema if not exists ${sql.id(o.schema!)}`.execute(migrating))
    await run(() => migrateToLatest(migrating, o.schema))
  } finally {
    await migrating.destroy()
  }
  const settings = [`-c statement_timeout=${o.statementTimeoutMs ?? 10_000}`, `-c lock_timeout=${o.lockTimeoutMs ?? 5_000}`, ...searchPath]
  // pipeline: a client sends each query at once instead of after the answer to the one before
  // (the runner's writes send BEGIN, a push's lock and its read in one round trip); a client
  // used one query at a time (kysely's, the pool's) behaves as without it
  const pool = new pg.Pool({
    connectionString: o.connectionString,
    max: o.pool ?? 10,
    options: settings.join(' '),
    application_name: 'envkeep',
    pipeline: true,
  })
  const lazyPool = new pg.Pool({
    connectionString: o.connectionString,
    max: LAZY_POOL,
    options: [...settings, '-c synchronous_commit=off'].join(' '),
    application_name: 'envkeep-counters',
  })
  // an idle connection that dies (server restart) must not crash the process
  pool.on('error', () => {})
  lazyPool.on('error', () => {})
  const db = new Kysely<unknown>({ dialect: new PostgresDialect({ pool }) })
  let closed = false
  return {
    db,
    pool,
    lazyPool,
    async close() {
      if (closed) return
      closed = true
      await Promise.all([db.destroy(), lazyPool.ended ? undefined : lazyPool.end()])
    },
  }
}

/** Connection-level failures (no SQLSTATE): the database cannot be reached. */
const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE', 'EHOSTUNREACH'])

/**
 * Any failure as a StorageError with the SQLSTATE PostgreSQL sent (the spec's vocabulary is
 * PostgreSQL's), naming at most the constraint, never a row's content.
 */
export function toStorageError(err: unknown): StorageError {
  if (err instanceof StorageError) return err
  const e = err as { code?: unknown; constraint?: unknown; message?: unknown } | null
  const code = typeof e?.code === 'string' ? e.code : ''
  if (/^[0-9A-Z]{5}$/.test(code)) {
    const detail = typeof e?.constraint === 'string' && /^[a-z_][a-z0-9_]*$/.test(e.constraint) ? e.constraint : undefined
    return new StorageError(code, detail, { cause: err })
  }
  if (CONNECTION_CODES.has(code) || /Connection terminated|connection timeout|Client has encountered a connection error/i.test(String(e?.message ?? ''))) {
    return new StorageError('08006', undefined, { cause: err })
  }
  if (/driver has already been destroyed|Cannot use a pool after calling end/i.test(String(e?.message ?? ''))) {
    return new StorageError('08003', 'the store is closed', { cause: err })
  }
  return new StorageError('XX000', undefined, { cause: err })
}

async function run<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn()
  } catch (err) {
    throw toStorageError(err)
  }
}

/** Serialization failures and deadlocks: the whole transaction is safe to run again. */
const RETRYABLE = new Set(['40001', '40P01'])
const ATTEMPTS = 4

/**
 * Runs `fn` in one transaction (READ COMMITTED, with row locks where a rule needs them),
 * again from the start after a serialization failure or deadlock, and maps failures.
 */
export function inTransaction<T>(db: Kysely<unknown>, fn: (trx: Transaction<unknown>) => Promise<T>): Promise<T> {
  return retried(() => db.transaction().execute(fn))
}

/** Runs `attempt` (one whole transaction) again after a serialization failure or deadlock; failures mapped. */
export async function retried<T>(attempt: () => Promise<T>): Promise<T> {
  for (let n = 1; ; n++) {
    try {
      return await attempt()
    } catch (err) {
      const e = toStorageError(err)
      if (RETRYABLE.has(e.sqlstate) && n < ATTEMPTS) {
        await new Promise((r) => setTimeout(r, 5 * n + Math.random() * 10))
        continue
      }
      throw e
    }
  }
}

/** A read outside a transaction, failures mapped. */
export function read<T>(fn: () => Promise<T>): Promise<T> {
  return run(fn)
}

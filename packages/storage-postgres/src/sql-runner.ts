import { byBytesFor, type DB, driveAsync, preparedName, type SqlDialect, type SqlRunner, type Step } from '@envkeep/storage-sql'
import type { Kysely } from 'kysely'
import type pg from 'pg'
import { inTransaction, type OpenPostgres, read } from './database.js'

/**
 * The PostgreSQL side of the SQL core's seam: a read runs its statements on
 * the pool; a write runs them on one client in one READ COMMITTED
 * transaction, with `for update` row locks where the core asks for them
 * (`rowLocks`), again from the start after a serialization failure or a
 * deadlock (`inTransaction`).
 */
export function createPostgresRunner(o: OpenPostgres): SqlRunner {
  // the pool's kysely, typed with the core's tables: it compiles the core's queries for PostgreSQL
  const db = o.db as unknown as Kysely<DB>
  const dialect: SqlDialect = { name: 'postgres', db, rowLocks: true, byBytes: byBytesFor('postgres') }
  const exec = (on: Kysely<unknown>) => async (step: Step) => {
    const r = await on.executeQuery(step.query)
    return step.want === 'rows' ? r.rows : Number(r.numAffectedRows ?? 0)
  }
  // On a pool (outside a transaction), the hot statements (the access-log insert, the
  // request counters) run as named statements: each connection parses and plans them once.
  const onPool = (pool: pg.Pool) => async (step: Step) => {
    const name = preparedName(step.query)
    if (!name && pool === o.pool) return exec(o.db)(step)
    const r = await pool.query({ ...(name ? { name } : {}), text: step.query.sql, values: step.query.parameters as unknown[] })
    return step.want === 'rows' ? r.rows : (r.rowCount ?? 0)
  }
  const pooled = onPool(o.pool)
  const lazy = onPool(o.lazyPool)
  return {
    dialect,
    read: (op) => read(() => driveAsync(op(), pooled)),
    // one statement is a transaction by itself: no BEGIN and COMMIT round trips around it;
    // one whose commit may be lazy (the request counters) runs on the pool that does not wait for the disk
    write: (op, options) =>
      options?.oneStatement ? read(() => driveAsync(op(), options.lazyCommit ? lazy : pooled)) : inTransaction(o.db, (trx) => driveAsync(op(), exec(trx))),
  }
}

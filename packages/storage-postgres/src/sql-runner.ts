import { byBytesFor, type DB, driveAsync, type Op, preparedName, type SqlDialect, type SqlRunner, type Step } from '@envkeep/storage-sql'
import type { Kysely } from 'kysely'
import type pg from 'pg'
import { type OpenPostgres, read, retried } from './database.js'

/**
 * The PostgreSQL side of the SQL core's seam: a read runs its statements on
 * the pool; a write runs them on one client in one READ COMMITTED
 * transaction, with `for update` row locks where the core asks for them
 * (`rowLocks`), again from the start after a serialization failure or a
 * deadlock (`retried`). Statements go to pg directly (kysely only compiles them): the
 * fixed ones of the hot paths as named statements (each connection parses
 * and plans them once), and a write sends BEGIN, the statements marked
 * `ahead` and COMMIT without waiting for the answer before (`transaction`).
 */
export function createPostgresRunner(o: OpenPostgres): SqlRunner {
  // the pool's kysely, typed with the core's tables: it compiles the core's queries for PostgreSQL
  const db = o.db as unknown as Kysely<DB>
  const dialect: SqlDialect = { name: 'postgres', db, rowLocks: true, byBytes: byBytesFor('postgres') }
  const onPool = (pool: pg.Pool) => async (step: Step) => answerOf(step, await pool.query(queryOf(step)))
  const pooled = onPool(o.pool)
  const lazy = onPool(o.lazyPool)
  return {
    dialect,
    read: (op) => read(() => driveAsync(op(), pooled)),
    // one statement is a transaction by itself: no BEGIN and COMMIT round trips around it;
    // one whose commit may be lazy (the request counters) runs on the pool that does not wait for the disk
    write: (op, options) =>
      options?.oneStatement ? read(() => driveAsync(op(), options.lazyCommit ? lazy : pooled)) : retried(() => transactionOnce(o.pool, op)),
  }
}

function queryOf(step: Step): pg.QueryConfig {
  const name = preparedName(step.query)
  const values = step.query.parameters as unknown[]
  return name ? { name, text: step.query.sql, values } : { text: step.query.sql, values }
}

function answerOf(step: Step, r: pg.QueryResult): unknown {
  return step.want === 'rows' ? r.rows : (r.rowCount ?? 0)
}

/**
 * One attempt, on one client of the pool (its clients pipeline: a query is sent at once, the
 * database answers them in order). BEGIN goes with the first statement; a statement marked
 * `ahead` with the next one; COMMIT with the last one when it is `ahead` (a push: BEGIN, its
 * lock and its read in one round trip, its rows and COMMIT in another). Every answer is
 * awaited before the operation reads another and before this returns: the first failure
 * fails the attempt (a statement after a failed one fails too, with 25P02, and a COMMIT
 * after it rolls back), and the transaction is rolled back if still open.
 */
async function transactionOnce<T>(pool: pg.Pool, op: () => Op<T>): Promise<T> {
  const client = await pool.connect()
  // what is sent before an answer is awaited leaves in one write (pg corks its own messages the same way)
  const socket = (client as unknown as { connection?: { stream?: { cork?(): void; uncork?(): void; writableCorked?: number } } }).connection?.stream
  // answers not awaited yet, in the order sent
  const sent: Promise<pg.QueryResult>[] = []
  const send = (q: pg.QueryConfig | string): Promise<pg.QueryResult> => {
    if (socket?.writableCorked === 0) socket.cork?.()
    const answer = client.query(q)
    // awaited below (settle), or dropped after the first failure: never an unhandled rejection
    answer.catch(() => {})
    sent.push(answer)
    return answer
  }
  // every answer sent so far, in order: throws the first failure
  const settle = async (): Promise<pg.QueryResult | undefined> => {
    while (socket?.writableCorked) socket.uncork?.()
    let last: pg.QueryResult | undefined
    while (sent.length > 0) last = await sent.shift()
    return last
  }
  let lost: Error | undefined
  try {
    send('begin')
    const value = await driveAsync(op(), async (step) => {
      send(queryOf(step))
      if (step.ahead) return undefined
      return answerOf(step, (await settle()) as pg.QueryResult)
    })
    send('commit')
    await settle()
    return value
  } catch (err) {
    while (socket?.writableCorked) socket.uncork?.()
    await Promise.allSettled(sent.splice(0))
    // still in the transaction (a statement failed, or the operation threw): rolled back; a
    // client that cannot even do that is dropped from the pool
    if (client.getTransactionStatus() !== 'I') {
      try {
        await client.query('rollback')
      } catch (e) {
        lost = e instanceof Error ? e : new Error('rollback failed')
      }
    }
    throw err
  } finally {
    client.release(lost)
  }
}

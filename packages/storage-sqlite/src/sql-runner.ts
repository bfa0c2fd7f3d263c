import { open } from 'node:fs/promises'
import { byBytesFor, drive, type Op, type SqlDialect, type SqlRunner, type Step } from '@envkeep/storage-sql'
import type { OpenDatabase } from './database.js'
import { prepared } from './statements.js'
import { holdConnection, toStorageError } from './sqlite-errors.js'

interface Queued {
  readonly op: () => Op<unknown>
  readonly resolve: (value: unknown) => void
  readonly reject: (err: unknown) => void
}

/**
 * The SQLite side of the SQL core's seam: operations run synchronously on the
 * one better-sqlite3 connection (statements prepared once), so nothing
 * interleaves inside one.
 *
 * Writes are group-committed: the writes asked for in one turn of the event
 * loop run one after the other in ONE `BEGIN IMMEDIATE` transaction, each in
 * a savepoint of its own (a failing one is rolled back alone and rejected
 * alone), and share its commit: one fsync under `synchronous = FULL`. Every
 * promise settles only after that commit, so an answer never leaves before
 * its access-log entry is on disk; a failed commit rejects them all.
 *
 * That fsync is not made on the event loop (`walSync`): with a WAL file and
 * `synchronous = FULL`, the batch commits under NORMAL (the WAL is written,
 * not synced) and the WAL file is then synced on libuv's thread pool; only
 * after that do the batch's promises settle. The same durability as FULL for
 * every write of the runner, without the server standing still for the disk.
 */
export function createSqliteRunner(d: OpenDatabase): SqlRunner {
  const dialect: SqlDialect = { name: 'sqlite', db: d.db, rowLocks: false, byBytes: byBytesFor('sqlite') }
  const exec = (step: Step): unknown => {
    const st = prepared(d, step.query.sql)
    const params = step.query.parameters as unknown[]
    return step.want === 'rows' ? st.all(...params) : st.run(...params).changes
  }
  const statement = (text: string) => prepared(d, text)
  let queue: Queued[] = []
  let scheduled = false
  const syncWal = walSync(d)

  const runBatch = (batch: Queued[]): (() => void)[] => {
    if (d.sqlite.inTransaction) throw new Error('envkeep: a transaction was left open on the database connection')
    const settled: (() => void)[] = []
    // the safety level can only change outside a transaction
    if (syncWal) statement('PRAGMA synchronous = NORMAL').run()
    try {
      statement('BEGIN IMMEDIATE').run()
      for (const item of batch) {
        if (batch.length === 1) {
          const value = drive(item.op(), exec)
          settled.push(() => item.resolve(value))
          continue
        }
        statement('SAVEPOINT envkeep_op').run()
        try {
          const value = drive(item.op(), exec)
          statement('RELEASE envkeep_op').run()
          settled.push(() => item.resolve(value))
        } catch (err) {
          statement('ROLLBACK TO envkeep_op').run()
          statement('RELEASE envkeep_op').run()
          settled.push(() => item.reject(toStorageError(err)))
        }
      }
      statement('COMMIT').run()
    } catch (err) {
      if (d.sqlite.inTransaction) statement('ROLLBACK').run()
      throw err
    } finally {
      // only the runner's own batches commit unsynced (and are synced by syncWal)
      if (syncWal) statement('PRAGMA synchronous = FULL').run()
    }
    return settled
  }

  const flush = async (): Promise<void> => {
    scheduled = false
    const batch = queue
    queue = []
    try {
      if (!d.sqlite.open) throw new TypeError('The database connection is not open')
      // a kysely transaction (the server's accounts) holds the connection across awaits: wait for it
      const settled = d.sqlite.inTransaction ? await holdConnection(d, async () => runBatch(batch)) : runBatch(batch)
      if (syncWal) await syncWal()
      for (const settle of settled) settle()
    } catch (err) {
      const e = toStorageError(err)
      for (const item of batch) item.reject(e)
    }
  }

  const readNow = <T>(op: () => Op<T>): T => {
    if (!d.sqlite.open) throw new TypeError('The database connection is not open')
    return drive(op(), exec)
  }

  return {
    dialect,
    async read<T>(op: () => Op<T>): Promise<T> {
      try {
        if (d.sqlite.inTransaction) return await holdConnection(d, async () => readNow(op))
        return readNow(op)
      } catch (err) {
        throw toStorageError(err)
      }
    },
    write<T>(op: () => Op<T>): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        queue.push({ op, resolve: resolve as (v: unknown) => void, reject })
        if (!scheduled) {
          scheduled = true
          setImmediate(flush)
        }
      })
    },
  }
}

/**
 * The WAL's fsync off the event loop, or null where it does not apply (no
 * WAL file: `:memory:`; `durability: 'normal'`, which never syncs at commit).
 * An fsync applies to the file, whichever descriptor asks: the WAL is opened
 * for each sync and closed after, so no descriptor outlives the database.
 */
function walSync(d: OpenDatabase): (() => Promise<void>) | null {
  if (d.sqlite.memory || String(d.sqlite.pragma('journal_mode', { simple: true })).toLowerCase() !== 'wal') return null
  if (Number(d.sqlite.pragma('synchronous', { simple: true })) < 2) return null
  const path = `${d.sqlite.name}-wal`
  return async () => {
    const handle = await open(path, 'r')
    try {
      await handle.datasync()
    } finally {
      await handle.close()
    }
  }
}

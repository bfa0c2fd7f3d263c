import { byBytesFor, drive, type Op, perTurn, type SqlDialect, type SqlRunner, type Step } from '@envkeep/storage-sql'
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
 * alone), and share its commit. Every promise settles only after that commit
 * is on disk, so an answer never leaves before its access-log entry is; a
 * failed commit rejects them all. With `commits` (durability `full` on a
 * file) the commit is made at `synchronous = NORMAL` (`syncForRunner`; kysely's
 * statements run at FULL) and its disk sync runs
 * off the event loop (commit-sync.ts); the writes asked for while a sync
 * runs are held and committed together when it finishes, one transaction
 * per sync; a read waits until what it may have seen is on disk. Without
 * it (`normal`, or SQLite's own FULL sync if the WAL file could not be
 * opened) the commit is as durable as the connection says.
 */
export function createSqliteRunner(d: OpenDatabase): SqlRunner {
  const dialect: SqlDialect = { name: 'sqlite', db: d.db, rowLocks: false, byBytes: byBytesFor('sqlite') }
  const exec = (step: Step): unknown => {
    const st = prepared(d, step.query.sql)
    const params = step.query.parameters as unknown[]
    return step.want === 'rows' ? st.all(...params) : st.run(...params).changes
  }
  const statement = (text: string) => prepared(d, text)
  const { commits } = d

  /** Runs the batch in one transaction; returns how to settle each item once the commit is durable. */
  const runBatch = (batch: Queued[]): (() => void)[] => {
    if (d.sqlite.inTransaction) throw new Error('envkeep: a transaction was left open on the database connection')
    if (commits?.failure) throw commits.failure
    d.syncForRunner() // the sync is commits'; kysely's next statement sets FULL again
    return inOneTransaction(batch)
  }

  const inOneTransaction = (batch: Queued[]): (() => void)[] => {
    const settled: (() => void)[] = []
    statement('BEGIN IMMEDIATE').run()
    try {
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
    }
    return settled
  }

  // one transaction a turn; with commits, the writes asked for while a sync runs commit together once it ends
  const commitNow = (batch: Queued[]): void => void commitBatch(batch)
  const enqueue = perTurn(commits ? commits.grouped(commitNow) : commitNow)

  const commitBatch = async (batch: Queued[]): Promise<void> => {
    try {
      if (!d.sqlite.open) throw new TypeError('The database connection is not open')
      // a kysely transaction (the server's accounts) holds the connection across awaits: wait for it
      const settled = d.sqlite.inTransaction ? await holdConnection(d, async () => runBatch(batch)) : runBatch(batch)
      if (commits) await commits.committed()
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
        const value = d.sqlite.inTransaction ? await holdConnection(d, async () => readNow(op)) : readNow(op)
        // what it read may include a commit whose sync is still running: it leaves only once on disk
        const synced = commits?.durable()
        if (synced) await synced
        return value
      } catch (err) {
        throw toStorageError(err)
      }
    },
    write<T>(op: () => Op<T>): Promise<T> {
      return new Promise<T>((resolve, reject) => enqueue({ op, resolve: resolve as (v: unknown) => void, reject }))
    },
  }
}

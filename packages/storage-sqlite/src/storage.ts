import type { Storage } from '@envkeep/env-api-plugin'
import { createSqlStorage } from '@envkeep/storage-sql'
import { createSqliteChangeWatch } from './change-watch.js'
import { openDatabase, type OpenDatabase, type OpenOptions } from './database.js'
import { createSqliteRunner } from './sql-runner.js'

export interface SqliteStorage extends Storage {
  watchChanges: NonNullable<Storage['watchChanges']>
  /** the open database, for the server's own stores (accounts) and tests */
  readonly database: OpenDatabase
  close(): Promise<void>
}

/** Opens the database (running migrations) and returns the SQL core's stores over it (one process: no shared request counters). */
export async function createSqliteStorage(options: OpenOptions): Promise<SqliteStorage> {
  return sqliteStorageOn(await openDatabase(options))
}

/** The SQL core's stores over a database opened already (tests give it one whose disk sync they control). */
export function sqliteStorageOn(database: OpenDatabase): SqliteStorage {
  const sql = createSqliteRunner(database)
  return createSqlStorage(sql, {
    changes: createSqliteChangeWatch(sql),
    sharedCounters: false,
    own: { database, close: () => database.close() },
  }) satisfies SqliteStorage
}

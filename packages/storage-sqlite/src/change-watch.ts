import { type ChangeWatch, createChangeWatch, type SqlRunner } from '@envkeep/storage-sql'

/**
 * `watchChanges` on SQLite (issue 20): the change counter (migration 014,
 * bumped by triggers) read every 250 ms while someone listens, so a change
 * by this store, another store on the file or another process is heard
 * within a second. Reads wait for a transaction holding the connection, so
 * an uncommitted count is never taken for a change.
 */
export function createSqliteChangeWatch(sql: SqlRunner): ChangeWatch {
  return createChangeWatch(sql)
}

import { type ChangeWatch, createChangeWatch, type SqlRunner } from '@envkeep/storage-sql'

/** How often SQLite reads the counter: one prepared read of one row in-process (microseconds), so often. */
export const SQLITE_CHANGE_POLL_MS = 50

/**
 * `watchChanges` on SQLite (issue 20): the change counter (migration 014,
 * bumped by triggers) read every 50 ms while someone listens, so a change
 * by another store on the file or another process (an `envkeep-server
 * admin` command beside the server) is heard well within a second; this
 * store's own changes are heard at once (storage.ts). Reads wait for a
 * transaction holding the connection, so an uncommitted count is never
 * taken for a change.
 */
export function createSqliteChangeWatch(sql: SqlRunner): ChangeWatch {
  return createChangeWatch(sql, { intervalMs: SQLITE_CHANGE_POLL_MS })
}

import { type ChangeWatch, createChangeWatch, type SqlRunner } from '@envkeep/storage-sql'
import pg from 'pg'
import type { OpenPostgres } from './database.js'

/** Channel the change triggers notify (migration 011). */
export const CHANGES_CHANNEL = 'envkeep_changes'
/** Wait before connecting the listening client again after it was lost. */
const RECONNECT_MS = 1_000

/**
 * `watchChanges` on PostgreSQL (issue 20): while someone listens, one
 * dedicated client of this process `LISTEN`s on `envkeep_changes` (a
 * notification is sent at the commit of every change the triggers of
 * migration 011 see), and the change counter is read every 250 ms as the
 * safety net: a lost connection (reconnected after a second), a missed
 * notification or a change made while reconnecting is still heard within
 * the second. A notification of another schema in the same database only
 * empties the caches once more.
 */
export function createPostgresChangeListener(database: OpenPostgres, sql: SqlRunner): ChangeWatch {
  return createChangeWatch(sql, { start: (w) => listen(database, () => w.signal()) })
}

function listen(database: OpenPostgres, heard: () => void): () => void {
  let stopped = false
  let client: pg.Client | null = null
  let retry: ReturnType<typeof setTimeout> | null = null
  let again = false

  const lost = (c: pg.Client): void => {
    if (client !== c) return
    client = null
    void c.end().catch(() => {})
    if (stopped) return
    retry = setTimeout(connect, RECONNECT_MS)
    retry.unref()
  }
  const connect = (): void => {
    retry = null
    if (stopped) return
    // the pool's own settings (address, TLS, schema), on a client of its own that is never returned
    const c = new pg.Client({ ...(database.pool.options as pg.ClientConfig), application_name: 'envkeep-changes' })
    client = c
    c.on('notification', (n) => {
      if (n.channel === CHANGES_CHANNEL) heard()
    })
    c.on('error', () => lost(c))
    c.on('end', () => lost(c))
    c.connect()
      .then(() => {
        // the listening connection never holds a process open by itself (the pool and the poll's timer decide)
        ;(c as unknown as { connection?: { stream?: { unref?(): void } } }).connection?.stream?.unref?.()
        return c.query(`listen ${CHANGES_CHANNEL}`)
      })
      .then(() => {
        // connected again: anything missed while away is heard as one change (the first time, the poll's first reading does it)
        if (client === c && !stopped && again) heard()
        again = true
      })
      .catch(() => lost(c))
  }
  connect()
  return () => {
    stopped = true
    if (retry) clearTimeout(retry)
    const c = client
    client = null
    if (c) void c.end().catch(() => {})
  }
}

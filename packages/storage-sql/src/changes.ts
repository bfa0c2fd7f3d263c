import type { SqlDialect, SqlRunner } from './dialect.js'
import { first, type Op } from './op.js'

/**
 * The change counter (issue 20): one row of `envkeep_changes`, bumped by
 * triggers in the same transaction as every change of what the plugin's
 * caches hold (SQLite migration 014, PostgreSQL 011). Both backends watch
 * it (`watchChanges`): SQLite by polling it, PostgreSQL by LISTEN/NOTIFY
 * with this poll as the safety net.
 */
type ChangesTable = {
  envkeep_changes: { id: number; counter: number | string | bigint }
}

/** The counter's value now (0 before anything changed). */
export function* changeCounter(d: SqlDialect): Op<number> {
  const r = yield* first(d.db.withTables<ChangesTable>().selectFrom('envkeep_changes').select('counter').where('id', '=', 1))
  return Number(r?.counter ?? 0)
}

/** How often the counter is read: a change is seen within this, well inside the second issue 20 allows. */
export const CHANGE_POLL_MS = 250

/**
 * Listeners of one store, and the counter poll that calls them when the
 * counter moves. The poll (and `start`, e.g. a LISTEN connection) runs
 * only while someone listens. The first reading calls them too: a change
 * between `watch` and that reading cannot be told apart, and a signal
 * without a change is allowed. `signal()` calls them from elsewhere (a
 * notification). `close()` stops everything for good.
 */
export interface ChangeWatch {
  watch(listener: () => void): () => void
  signal(): void
  close(): void
}

export function createChangeWatch(s: SqlRunner, o: { intervalMs?: number; start?: (w: ChangeWatch) => () => void } = {}): ChangeWatch {
  const listeners = new Set<() => void>()
  let timer: ReturnType<typeof setInterval> | null = null
  let stopExtra: (() => void) | null = null
  let last: number | null = null
  let reading = false
  let closed = false

  const signal = (): void => {
    for (const l of [...listeners]) {
      try {
        l()
      } catch {
        // a listener's failure is its own; the others still hear the change
      }
    }
  }
  const poll = async (): Promise<void> => {
    if (reading || closed) return
    reading = true
    try {
      const now = await s.read(() => changeCounter(s.dialect))
      const moved = last === null || now !== last
      last = now
      if (moved && !closed) signal()
    } catch {
      // the database is away: the next tick tries again; a change meanwhile moves the counter
    } finally {
      reading = false
    }
  }
  const stop = (): void => {
    if (timer) clearInterval(timer)
    timer = null
    stopExtra?.()
    stopExtra = null
    last = null
  }
  const w: ChangeWatch = {
    watch(listener) {
      if (closed) return () => {}
      listeners.add(listener)
      if (!timer) {
        timer = setInterval(() => void poll(), o.intervalMs ?? CHANGE_POLL_MS)
        timer.unref()
        void poll()
        stopExtra = o.start?.(w) ?? null
      }
      return () => {
        listeners.delete(listener)
        if (listeners.size === 0) stop()
      }
    },
    signal,
    close() {
      closed = true
      listeners.clear()
      stop()
    },
  }
  return w
}

import type { Storage, WindowCount } from '@envkeep/env-api-plugin'
import { sql } from 'kysely'
import type { SqlRunner } from './dialect.js'
import { all, first, run } from './op.js'
import { date, num } from './rows.js'

export type RateCounters = Required<Pick<Storage, 'countRequest' | 'peekRequests'>>

/**
 * Request counters in the database, shared by every server process (table rate_counters):
 * one statement counts a request in each window atomically (an upsert per window; a window
 * starts at its first request and, once over, the next request starts a new one at 1).
 * Composed by PostgreSQL only: SQLite is one process, has no such table, and the plugin
 * counts in memory there.
 */
export function createRateCounters(s: SqlRunner): RateCounters {
  const { db } = s.dialect
  return {
    // one statement, atomic by itself: run outside a transaction (no BEGIN and COMMIT round
    // trips), since the API's rate limit counts every request here; `afresh` (a success of the
    // sign-in back-off) first deletes the key's windows, in one transaction with the count
    countRequest: (key, windowsMs, now, afresh) => {
      const count = function* () {
        if (afresh) yield* run(db.deleteFrom('rate_counters').where('key', '=', key))
        if (windowsMs.length === 0) return []
        const at = now.getTime()
        const values = windowsMs.map((w) => sql`(${key}, cast(${w} as bigint), cast(${at} as bigint), cast(1 as bigint))`)
        const upsert = sql<{ window_ms: unknown; window_start: unknown; count: unknown }>`
          insert into rate_counters (key, window_ms, window_start, count) values ${sql.join(values)}
          on conflict (key, window_ms) do update set
            count = case when rate_counters.window_start + rate_counters.window_ms > excluded.window_start then rate_counters.count + 1 else 1 end,
            window_start = case when rate_counters.window_start + rate_counters.window_ms > excluded.window_start then rate_counters.window_start else excluded.window_start end
          returning window_ms, window_start, count`
        const counted = yield* all({ compile: () => upsert.compile(db) })
        return windowsMs.map((w): WindowCount => {
          const r = counted.find((c) => num(c.window_ms) === w)
          if (!r) throw new Error('envkeep: a rate counter was not counted')
          return { count: num(r.count), resetAt: date(num(r.window_start) + w) }
        })
      }
      return afresh ? s.write(count) : s.read(count)
    },
    peekRequests: (key, windowMs) =>
      s.read(function* () {
        const r = yield* first(db.selectFrom('rate_counters').select(['window_start', 'count']).where('key', '=', key).where('window_ms', '=', windowMs))
        return r ? { count: num(r.count), windowStart: date(r.window_start) } : null
      }),
  }
}

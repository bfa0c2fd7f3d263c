import type { WindowCount } from '@envkeep/env-api-plugin'
import { sql, type Kysely } from 'kysely'
import { read } from './database.js'
import { rows } from './vault-store.js'

/**
 * Request counters in the database, shared by every server process: one statement counts a
 * request in each window atomically (an upsert per window; a window starts at its first
 * request and, once over, the next request starts a new one at 1).
 */
export class PostgresRateCounters {
  readonly #db: Kysely<unknown>

  constructor(db: Kysely<unknown>) {
    this.#db = db
  }

  countRequest(key: string, windowsMs: readonly number[], now: Date): Promise<WindowCount[]> {
    const at = now.getTime()
    // a window starts at the first request counted in it (as @fastify/rate-limit's own store does)
    const values = windowsMs.map((w) => sql`(${key}, ${w}::bigint, ${at}::bigint, 1::bigint)`)
    return read(async () => {
      const counted = await rows<{ window_ms: string; window_start: string; count: string }>(
        this.#db,
        sql`insert into rate_counters (key, window_ms, window_start, count) values ${sql.join(values)}
          on conflict (key, window_ms) do update set
            count = case when rate_counters.window_start + rate_counters.window_ms > excluded.window_start then rate_counters.count + 1 else 1 end,
            window_start = case when rate_counters.window_start + rate_counters.window_ms > excluded.window_start then rate_counters.window_start else excluded.window_start end
          returning window_ms, window_start, count`,
      )
      return windowsMs.map((w) => {
        const r = counted.find((c) => Number(c.window_ms) === w)!
        return { count: Number(r.count), resetAt: new Date(Number(r.window_start) + w) }
      })
    })
  }

  async peekRequests(key: string, windowMs: number): Promise<{ count: number; windowStart: Date } | null> {
    return read(async () => {
      const [r] = await rows<{ window_start: string; count: string }>(
        this.#db,
        sql`select window_start, count from rate_counters where key = ${key} and window_ms = ${windowMs}::bigint`,
      )
      return r ? { count: Number(r.count), windowStart: new Date(Number(r.window_start)) } : null
    })
  }

  async forgetRequests(key: string): Promise<void> {
    await read(() => sql`delete from rate_counters where key = ${key}`.execute(this.#db))
  }
}

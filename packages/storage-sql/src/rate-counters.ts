import type { Storage, WindowCount } from '@envkeep/env-api-plugin'
import { sql } from 'kysely'
import type { SqlDialect, SqlRunner } from './dialect.js'
import { fixedQuery, raw } from './fixed-query.js'
import { all, first, run } from './op.js'
import { perTurn } from './per-turn.js'
import { date, num } from './rows.js'

export type RateCounters = Required<Pick<Storage, 'countRequest' | 'peekRequests'>>

/** One counter row of a batch: a key's window, counted `n` times from `at`. */
interface Row {
  readonly key: string
  readonly windowMs: number
  readonly at: number
  n: number
}

/** A count waiting for its turn's statement. */
interface Pending {
  readonly key: string
  readonly windowsMs: readonly number[]
  readonly at: number
  readonly resolve: (counts: WindowCount[]) => void
  readonly reject: (err: unknown) => void
}

const MOST_FIXED = 32

type Counted = { key: unknown; window_ms: unknown; window_start: unknown; count: unknown }

/**
 * The upsert of `rows` counter rows, each `(key, window, start, n)`: a window still open adds
 * n; one that is over starts again at n from this start. Texts compiled once per row count up
 * to MOST_FIXED (named `prepare`: PostgreSQL parses each once per connection).
 */
const upsertOf = (rows: number) =>
  fixedQuery<unknown[], Counted>(
    (d, arg) => {
      const values = Array.from(
        { length: rows },
        (_, i) => sql`(${arg(4 * i)}, cast(${arg(4 * i + 1)} as bigint), cast(${arg(4 * i + 2)} as bigint), cast(${arg(4 * i + 3)} as bigint))`,
      )
      return raw(
        d,
        sql<Counted>`insert into rate_counters (key, window_ms, window_start, count) values ${sql.join(values)}
        on conflict (key, window_ms) do update set
          count = case when rate_counters.window_start + rate_counters.window_ms > excluded.window_start then rate_counters.count + excluded.count else excluded.count end,
          window_start = case when rate_counters.window_start + rate_counters.window_ms > excluded.window_start then rate_counters.window_start else excluded.window_start end
        returning key, window_ms, window_start, count`,
      )
    },
    rows <= MOST_FIXED ? `rate_counters_${rows}` : undefined,
  )
const fixedUpserts = Array.from({ length: MOST_FIXED + 1 }, (_, n) => (n === 0 ? null : upsertOf(n)))

/** Counts `rows` in one statement; the stored rows after it. */
function* upsert(d: SqlDialect, rows: readonly Row[]) {
  const params = rows.flatMap((r) => [r.key, r.windowMs, r.at, r.n])
  const q = fixedUpserts[rows.length] ?? upsertOf(rows.length)
  return yield* all(q(d, ...params))
}

const slot = (key: string, windowMs: number) => `${windowMs} ${key}`

/**
 * Request counters in the database, shared by every server process (table rate_counters):
 * a count is atomic (an upsert per window; a window starts at its first request and, once
 * over, the next request starts a new one at 1). Composed by PostgreSQL only: SQLite is one
 * process, has no such table, and the plugin counts in memory there.
 *
 * The counts of one event-loop turn (the concurrent requests) go as ONE statement: one row
 * per key and window, counted by how many requests asked for it, each request getting its
 * own number back (the k-th of n asking gets the stored count - n + k, as if they had come
 * one after another). Requests of one turn share the first one's time for the window's
 * start. If the statement fails, each key is tried alone, so only a key that cannot be
 * counted fails its requests. The statement's commit does not wait for the disk
 * (`lazyCommit`): every process sees a count once it is answered, as before; only a crash of
 * the database itself may forget the last fraction of a second of counts (a restart of a
 * SQLite server forgets all of its in-memory counts).
 */
export function createRateCounters(s: SqlRunner): RateCounters {
  const d = s.dialect
  const { db } = d

  const countAll = async (batch: readonly Pending[]): Promise<void> => {
    const rows = new Map<string, Row>()
    for (const p of batch) {
      for (const w of p.windowsMs) {
        const k = slot(p.key, w)
        const r = rows.get(k)
        if (r) r.n++
        else rows.set(k, { key: p.key, windowMs: w, at: p.at, n: 1 })
      }
    }
    // in one order everywhere (key, then window): two processes' statements lock the rows they
    // share in the same order, so they wait for each other instead of deadlocking
    const list = [...rows.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.windowMs - b.windowMs))
    // one statement, atomic by itself: no BEGIN and COMMIT round trips; its commit need not
    // wait for the disk (a crash of the database may forget the last moment of counts)
    const counted = await s.write(() => upsert(d, list), { oneStatement: true, lazyCommit: true })
    const stored = new Map<string, { count: number; start: number }>()
    for (const c of counted) stored.set(slot(String(c.key), num(c.window_ms)), { count: num(c.count), start: num(c.window_start) })
    // the requests of a row, in the order they asked: the last one gets the stored count
    const seen = new Map<string, number>()
    for (const p of batch) {
      try {
        p.resolve(
          p.windowsMs.map((w): WindowCount => {
            const k = slot(p.key, w)
            const c = stored.get(k)
            const row = rows.get(k)
            if (!c || !row) throw new Error('envkeep: a rate counter was not counted')
            const before = seen.get(k) ?? 0
            seen.set(k, before + 1)
            return { count: c.count - row.n + before + 1, resetAt: date(c.start + w) }
          }),
        )
      } catch (err) {
        p.reject(err)
      }
    }
  }

  const count = perTurn(async (batch: Pending[]): Promise<void> => {
    try {
      await countAll(batch)
    } catch (err) {
      const keys = new Set(batch.map((p) => p.key))
      if (keys.size === 1) {
        for (const p of batch) p.reject(err)
        return
      }
      await Promise.all(
        [...keys].map((key) => {
          const mine = batch.filter((p) => p.key === key)
          return countAll(mine).catch((e: unknown) => {
            for (const p of mine) p.reject(e)
          })
        }),
      )
    }
  })

  return {
    countRequest: (key, windowsMs, now, afresh) => {
      if (!afresh && windowsMs.length > 0) {
        return new Promise<WindowCount[]>((resolve, reject) => count({ key, windowsMs, at: now.getTime(), resolve, reject }))
      }
      // `afresh` (a success of the sign-in back-off): first deletes the key's windows, in
      // one transaction with the count; rare, so alone
      return s.write(function* () {
        yield* run(db.deleteFrom('rate_counters').where('key', '=', key))
        if (windowsMs.length === 0) return []
        const counted = yield* upsert(
          d,
          windowsMs.map((w) => ({ key, windowMs: w, at: now.getTime(), n: 1 })),
        )
        return windowsMs.map((w): WindowCount => {
          const r = counted.find((c) => num(c.window_ms) === w)
          if (!r) throw new Error('envkeep: a rate counter was not counted')
          return { count: num(r.count), resetAt: date(num(r.window_start) + w) }
        })
      })
    },
    peekRequests: (key, windowMs) =>
      s.read(function* () {
        const r = yield* first(db.selectFrom('rate_counters').select(['window_start', 'count']).where('key', '=', key).where('window_ms', '=', windowMs))
        return r ? { count: num(r.count), windowStart: date(r.window_start) } : null
      }),
  }
}

import { createHash } from 'node:crypto'
import type { SharedCounters } from '@envkeep/env-api-plugin'

/**
 * Attempt limits of the sign-in forms (login, setup, invitations, and any
 * further kind: a kind is a name that keeps its counters apart). With the
 * storage's shared counters (PostgreSQL: `countRequest`, `peekRequests`),
 * every server process counts in the same place, so two
 * processes allow no more guesses than one; without them (SQLite: one
 * process), in memory.
 */

/** The storage's shared request counters, the ones the API's rate limits use (the core's `domain.sharedCounters()`). */
export type AttemptCounters = SharedCounters

export interface AttemptLimiter {
  /** Counts one attempt for `key`; refused with the seconds to wait once over the limit. */
  take(key: string): Promise<{ ok: true } | { ok: false; retryAfterSeconds: number }>
}

export interface AttemptLimiterOptions {
  /** keeps this limiter's counters apart from other kinds' (`sign-in`, `invitation`, …) */
  readonly kind: string
  readonly max: number
  readonly windowMs: number
  readonly now: () => Date
  /** shared counters (every process); null or absent: in memory, per process */
  readonly counters?: AttemptCounters | null
}

/** A fixed-window counter per key (client address): in the shared counters, or in memory. */
export function createAttemptLimiter(o: AttemptLimiterOptions): AttemptLimiter {
  const counters = o.counters ?? null
  const refused = (resetAt: number, t: number) => ({ ok: false as const, retryAfterSeconds: Math.max(1, Math.ceil((resetAt - t) / 1000)) })
  if (counters) {
    return {
      async take(key) {
        const now = o.now()
        const [c] = await counters.countRequest(`attempt:${o.kind}:${key}`, [o.windowMs], now)
        return c && c.count > o.max ? refused(c.resetAt.getTime(), now.getTime()) : { ok: true }
      },
    }
  }
  const windows = new Map<string, { start: number; count: number }>()
  return {
    async take(key) {
      const t = o.now().getTime()
      if (windows.size > 10_000) {
        for (const [k, w] of windows) if (t - w.start >= o.windowMs) windows.delete(k)
      }
      let w = windows.get(key)
      if (!w || t - w.start >= o.windowMs) {
        w = { start: t, count: 0 }
        windows.set(key, w)
      }
      w.count++
      return w.count > o.max ? refused(w.start + o.windowMs, t) : { ok: true }
    },
  }
}

export interface LoginBackoff {
  /** Null when a password may be tried for `account` now; else the seconds to wait. */
  wait(account: string): Promise<number | null>
  /** A wrong password (or unknown email) for `account`. */
  failed(account: string): Promise<void>
  /** A successful sign-in: the account starts afresh. */
  succeeded(account: string): Promise<void>
}

export interface LoginBackoffOptions {
  readonly free?: number
  readonly capMs?: number
  readonly forgetMs?: number
  readonly now: () => Date
  /** keeps this back-off's counters apart from other kinds' (default `login`) */
  readonly kind?: string
  /** shared counters (every process); null or absent: in memory, per process */
  readonly counters?: AttemptCounters | null
}

/** How long a run of failures is counted in the shared counters at most (then it starts afresh). */
const RUN_MS = 24 * 60 * 60_000

/**
 * Per-account back-off for sign-in, whatever the address: after `free` wrong passwords in a
 * row, each further try waits 1, 2, 4 … seconds after the last wrong one, capped at `capMs`.
 * Guessing one account from many addresses slows to about one try per `capMs`, while a
 * stranger can never lock the owner out for longer than `capMs` after their last try (no
 * lock-out). Keyed by the normalized email, known or not, so it says nothing about which
 * emails have accounts. With shared counters, the run is kept there (keyed by a hash of the
 * email, never the email): the number of failures, and the time of each, so every process
 * sees the same back-off.
 */
export function createLoginBackoff(o: LoginBackoffOptions): LoginBackoff {
  const free = o.free ?? 5
  const capMs = o.capMs ?? 30_000
  const forgetMs = o.forgetMs ?? 15 * 60_000
  const key = (account: string) => account.trim().toLowerCase()
  const delayAfter = (failures: number) => Math.min(capMs, 1000 * 2 ** (failures - free))
  const waitFrom = (failures: number, last: number, t: number): number | null => {
    if (failures < free || t - last >= forgetMs) return null
    const left = last + delayAfter(failures) - t
    return left > 0 ? Math.max(1, Math.ceil(left / 1000)) : null
  }
  const counters = o.counters ?? null
  if (counters) {
    const kind = o.kind ?? 'login'
    const runKey = (account: string) => `backoff:${kind}:${createHash('sha256').update(key(account)).digest('hex')}`
    // the n-th failure of the run that started at `start`: its window starts at its time
    const atKey = (run: string, start: Date, n: number) => `${run}:${start.getTime()}:${n}`
    async function last(run: string): Promise<{ failures: number; at: number } | null> {
      const r = await counters!.peekRequests(run, RUN_MS)
      if (!r) return null
      const at = await counters!.peekRequests(atKey(run, r.windowStart, r.count), forgetMs)
      return at ? { failures: r.count, at: at.windowStart.getTime() } : null
    }
    return {
      async wait(account) {
        const l = await last(runKey(account))
        return l ? waitFrom(l.failures, l.at, o.now().getTime()) : null
      },
      async failed(account) {
        const now = o.now()
        const run = runKey(account)
        const l = await last(run)
        // a new run starts afresh: the old one's windows are forgotten first
        const [c] = await counters.countRequest(run, [RUN_MS], now, !l || now.getTime() - l.at >= forgetMs)
        if (c) await counters.countRequest(atKey(run, new Date(c.resetAt.getTime() - RUN_MS), c.count), [forgetMs], now)
      },
      async succeeded(account) {
        await counters.countRequest(runKey(account), [], o.now(), true)
      },
    }
  }
  const accounts = new Map<string, { failures: number; last: number }>()
  function entry(account: string, t: number) {
    const e = accounts.get(key(account))
    if (e && t - e.last >= forgetMs) {
      accounts.delete(key(account))
      return undefined
    }
    return e
  }
  return {
    async wait(account) {
      const t = o.now().getTime()
      const e = entry(account, t)
      return e ? waitFrom(e.failures, e.last, t) : null
    },
    async failed(account) {
      const t = o.now().getTime()
      if (accounts.size > 100_000) for (const [k, e] of accounts) if (t - e.last >= forgetMs) accounts.delete(k)
      const e = entry(account, t) ?? { failures: 0, last: t }
      e.failures++
      e.last = t
      accounts.set(key(account), e)
    },
    async succeeded(account) {
      accounts.delete(key(account))
    },
  }
}

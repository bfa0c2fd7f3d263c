export interface AttemptLimiter {
  /** Counts one attempt for `key`; refused with the seconds to wait once over the limit. */
  take(key: string): { ok: true } | { ok: false; retryAfterSeconds: number }
}

/**
 * A fixed-window counter per key (client address) in memory: enough for
 * one server process guarding its sign-in forms.
 */
export function createAttemptLimiter(o: { max: number; windowMs: number; now: () => Date }): AttemptLimiter {
  const windows = new Map<string, { start: number; count: number }>()
  return {
    take(key) {
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
      if (w.count > o.max) return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil((w.start + o.windowMs - t) / 1000)) }
      return { ok: true }
    },
  }
}

export interface LoginBackoff {
  /** Null when a password may be tried for `account` now; else the seconds to wait. */
  wait(account: string): number | null
  /** A wrong password (or unknown email) for `account`. */
  failed(account: string): void
  /** A successful sign-in: the account starts afresh. */
  succeeded(account: string): void
}

/**
 * Per-account back-off for sign-in, whatever the address: after `free` wrong passwords in a
 * row, each further try waits 1, 2, 4 … seconds after the last wrong one, capped at `capMs`.
 * Guessing one account from many addresses slows to about one try per `capMs`, while a
 * stranger can never lock the owner out for longer than `capMs` after their last try (no
 * lock-out). Keyed by the normalized email, known or not, so it says nothing about which
 * emails have accounts. In memory, per process.
 */
export function createLoginBackoff(o: { free?: number; capMs?: number; forgetMs?: number; now: () => Date }): LoginBackoff {
  const free = o.free ?? 5
  const capMs = o.capMs ?? 30_000
  const forgetMs = o.forgetMs ?? 15 * 60_000
  const accounts = new Map<string, { failures: number; last: number }>()
  const key = (account: string) => account.trim().toLowerCase()
  function entry(account: string, t: number) {
    const e = accounts.get(key(account))
    if (e && t - e.last >= forgetMs) {
      accounts.delete(key(account))
      return undefined
    }
    return e
  }
  return {
    wait(account) {
      const t = o.now().getTime()
      const e = entry(account, t)
      if (!e || e.failures < free) return null
      const delay = Math.min(capMs, 1000 * 2 ** (e.failures - free))
      const left = e.last + delay - t
      return left > 0 ? Math.max(1, Math.ceil(left / 1000)) : null
    },
    failed(account) {
      const t = o.now().getTime()
      if (accounts.size > 100_000) for (const [k, e] of accounts) if (t - e.last >= forgetMs) accounts.delete(k)
      const e = entry(account, t) ?? { failures: 0, last: t }
      e.failures++
      e.last = t
      accounts.set(key(account), e)
    },
    succeeded(account) {
      accounts.delete(key(account))
    },
  }
}

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

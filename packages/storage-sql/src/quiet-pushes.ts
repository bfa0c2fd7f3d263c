/**
 * Pushes this store created in a vault that had no webhook: seen in the push's own
 * transaction, after the vault's row lock (a webhook is added under the same lock), so the
 * enqueue that follows the creation (`enqueueDeliveries` for the push, the domain's
 * `notifyWebhooks`) has nothing to insert and skips its read of the webhooks. An entry is
 * taken by that one enqueue (a later one, e.g. once the push is decided, reads as before),
 * dropped when the push is decided, and kept at most `MAX_AGE_MS` and `MOST` entries
 * (past them, the enqueue reads as before). A webhook added later is found by the sweep of
 * recent events, as one added while an enqueue runs always was.
 */
export interface QuietPushes {
  /** after the push's transaction committed */
  add(pushId: string): void
  /** whether the push was created quiet, and not long ago (once) */
  take(pushId: string): boolean
  drop(pushId: string): void
}

const MOST = 1024
const MAX_AGE_MS = 10_000

export function createQuietPushes(now: () => number = Date.now): QuietPushes {
  const made = new Map<string, number>()
  return {
    add(pushId) {
      if (made.size >= MOST) made.delete(made.keys().next().value as string)
      made.set(pushId, now())
    },
    take(pushId) {
      const at = made.get(pushId)
      if (at === undefined) return false
      made.delete(pushId)
      return now() - at <= MAX_AGE_MS
    },
    drop(pushId) {
      made.delete(pushId)
    },
  }
}

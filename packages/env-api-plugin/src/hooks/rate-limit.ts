import type { FastifyInstance, FastifyRequest } from 'fastify'
import fastifyRateLimit from '@fastify/rate-limit'
import { errors } from '../errors.js'
import type { Storage } from '../adapters/storage.js'
import type { ResolvedOptions } from '../options.js'

const MINUTE = 60_000
const DAY = 24 * 60 * MINUTE

/** A window of a limit: its length, the most requests in it, and how a refusal says it. */
export type LimitWindow = readonly [ms: number, max: number, phrase: string]

/**
 * Limits counted in the storage's shared counters (every process sees them): one count of
 * `key` in every window; the first window over its limit, with the seconds to wait, or null.
 */
export function createSharedLimits(count: NonNullable<Storage['countRequest']>, windows: readonly LimitWindow[]) {
  const lengths = windows.map(([ms]) => ms)
  return async function overLimit(key: string, now: Date): Promise<{ wait: number; phrase: string } | null> {
    const counts = await count(key, lengths, now)
    for (let i = 0; i < windows.length; i++) {
      const [, max, phrase] = windows[i] as LimitWindow
      const c = counts[i]
      if (c && c.count > max) return { wait: Math.max(1, Math.ceil((c.resetAt.getTime() - now.getTime()) / 1000)), phrase }
    }
    return null
  }
}

/**
 * Two windows per key across every /api/env route: `perMinute` a minute and
 * `perDay` a day. The key is the sign-in, or the client address for
 * requests without a valid token. Beyond either: 429 rate_limited with
 * `Retry-After` in seconds. Must run after `authenticate`.
 */
export async function createRateLimitHook(app: FastifyInstance, opts: ResolvedOptions) {
  const windows: LimitWindow[] = [
    [MINUTE, opts.rateLimit.perMinute, `more than ${opts.rateLimit.perMinute} requests in a minute`],
    [DAY, opts.rateLimit.perDay, `more than ${opts.rateLimit.perDay} requests in a day`],
  ]
  const shared = opts.core.domain.sharedCounters()?.countRequest
  if (shared) {
    // counters in the database: the limits hold whichever process answers
    const overLimit = createSharedLimits(shared, windows)
    return async function rateLimit(request: FastifyRequest): Promise<void> {
      const over = await overLimit(request.signIn ? `sign-in:${request.signIn.id}` : `address:${request.ip}`, opts.now())
      if (over) {
        const who = request.signIn ? 'this sign-in' : 'this address'
        throw errors.rateLimited(over.wait, `${who} made ${over.phrase}; retry after ${over.wait} seconds`)
      }
    }
  }
  await app.register(fastifyRateLimit, { global: false })
  const keyGenerator = (request: FastifyRequest): string => (request.signIn ? `sign-in:${request.signIn.id}` : `address:${request.ip}`)
  const perMinute = app.createRateLimit({ max: opts.rateLimit.perMinute, timeWindow: MINUTE, keyGenerator })
  const perDay = app.createRateLimit({ max: opts.rateLimit.perDay, timeWindow: DAY, keyGenerator })

  const limiters = [
    [perMinute, `more than ${opts.rateLimit.perMinute} requests in a minute`],
    [perDay, `more than ${opts.rateLimit.perDay} requests in a day`],
  ] as const
  return async function rateLimit(request: FastifyRequest): Promise<void> {
    for (const [limiter, phrase] of limiters) {
      const r = await limiter(request)
      if (!r.isAllowed && r.isExceeded) {
        const who = request.signIn ? 'this sign-in' : 'this address'
        throw errors.rateLimited(Math.max(1, r.ttlInSeconds), `${who} made ${phrase}; retry after ${Math.max(1, r.ttlInSeconds)} seconds`)
      }
    }
  }
}

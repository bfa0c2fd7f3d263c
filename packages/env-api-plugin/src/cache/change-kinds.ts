/**
 * Which storage methods change what the core's caches hold (issue 20). A
 * method is taken as a change unless it is known not to be one: a read
 * (its name starts with get, find, list or read, or is firstChangesAfter),
 * or one of the writes the caches never read (the access log, the rate
 * counters, authorization codes, client registrations, webhook deliveries,
 * pending pushes and their expiry, which housekeeping runs every few seconds). A method added later is a change until listed here, so a
 * new write can never leave a cache stale; it can only empty it too often.
 */
const READ = /^(get|find|list|read|peek)[A-Z]/

const NEUTRAL = new Set([
  'watchChanges',
  'firstChangesAfter',
  'appendAccessLog',
  'countRequest',
  'pruneHistory',
  'saveAuthorizationCode',
  'saveClientRegistration',
  'claimDeliveries',
  'enqueueDeliveries',
  'finishAttempt',
  'pruneDeliveries',
  'createImport',
  'expireImports',
  'close',
])

/** Whether calling storage method `name` may change what the caches hold (sign-ins, access, environments, values, keys). */
export function changesCachedData(name: string): boolean {
  return !READ.test(name) && !NEUTRAL.has(name)
}

/**
 * `target` with every method that changes cached data (changesCachedData)
 * wrapped: `after()` runs once it settles (resolved or not), before its
 * caller sees the answer. Every method and property is looked up on
 * `target` at each use, so a method replaced there later (a test's
 * instrumentation) is the one called.
 */
export function onChanges<T extends object>(target: T, after: () => void): T {
  const out: Record<string, unknown> = {}
  const t = target as Record<string, unknown>
  for (const k of propertyNames(target)) {
    const v = t[k]
    if (typeof v !== 'function') {
      // looked up at each use, like the methods: the target stays the one source
      Object.defineProperty(out, k, { get: () => t[k], enumerable: true })
      continue
    }
    if (!changesCachedData(k)) {
      out[k] = (...args: unknown[]): unknown => (t[k] as (...a: unknown[]) => unknown).apply(target, args)
      continue
    }
    out[k] = (...args: unknown[]): unknown => {
      let result: unknown
      try {
        result = (t[k] as (...a: unknown[]) => unknown).apply(target, args)
      } catch (err) {
        after()
        throw err
      }
      if (result instanceof Promise)
        return result.then(
          (value) => {
            after()
            return value
          },
          (err: unknown) => {
            after()
            throw err
          },
        )
      after()
      return result
    }
  }
  return out as T
}

/** Own and inherited property names (a class instance's methods too), but Object's. */
function propertyNames(o: object): string[] {
  const names = new Set<string>()
  for (let p: object | null = o; p && p !== Object.prototype; p = Object.getPrototypeOf(p) as object | null)
    for (const k of Object.getOwnPropertyNames(p)) if (k !== 'constructor') names.add(k)
  return [...names]
}

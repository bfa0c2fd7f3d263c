/**
 * What the plugin tells a host that counts things (metrics), without depending on any metrics
 * library: every method optional, called synchronously, never awaited, and a throw is ignored.
 * Every argument is from a fixed set: never a vault or variable name, an email or a token.
 */
export interface EnvApiObserver {
  /** a bearer token was checked at /api/env: a live sign-in, a token that is not one, or no token */
  tokenCheck?(outcome: 'valid' | 'invalid' | 'missing'): void
  /** an /api/env operation was answered, by outcome (from its status) */
  apiOperation?(operation: ApiOperation, outcome: ApiOutcome): void
  /** a webhook delivery attempt ended */
  webhookDelivery?(outcome: 'delivered' | 'retry' | 'failed'): void
}

export type ApiOperation = 'list' | 'read' | 'push' | 'push_status' | 'other'
export type ApiOutcome = 'ok' | 'unauthorized' | 'forbidden' | 'not_found' | 'rate_limited' | 'refused' | 'limit' | 'unavailable' | 'error'

/** The outcome class of a status code. */
export function outcomeOf(status: number): ApiOutcome {
  if (status < 400) return 'ok'
  if (status === 401) return 'unauthorized'
  if (status === 403) return 'forbidden'
  if (status === 404) return 'not_found'
  if (status === 429) return 'rate_limited'
  if (status === 507) return 'limit'
  if (status === 503) return 'unavailable'
  return status < 500 ? 'refused' : 'error'
}

/** The observer with each method made safe: absent ones do nothing, a throwing one is ignored. */
export function safeObserver(o: EnvApiObserver | undefined): Required<EnvApiObserver> {
  const call =
    <A extends unknown[]>(f: ((...a: A) => void) | undefined) =>
    (...a: A): void => {
      if (!f) return
      try {
        f.apply(o, a)
      } catch {}
    }
  return Object.freeze({
    tokenCheck: call(o?.tokenCheck),
    apiOperation: call(o?.apiOperation),
    webhookDelivery: call(o?.webhookDelivery),
  })
}

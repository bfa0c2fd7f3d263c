import type { FastifyBaseLogger } from 'fastify'
import * as client from 'openid-client'
import type { OidcConfig } from './oidc-config.js'

export interface OidcClient {
  /** The provider's configuration once discovery succeeded, else null (the button then says to retry). */
  configuration(): client.Configuration | null
  /** Resolves once discovery succeeded (tests); never rejects. */
  ready(): Promise<void>
  stop(): void
}

/**
 * Discovery of the provider (`/.well-known/openid-configuration`, through openid-client),
 * retried in the background: 1, 2, 4 … s up to 5 minutes between tries, never blocking
 * start-up; a server whose provider is down starts, and its SSO button answers "not
 * reachable yet" until a try succeeds. The client secret goes only to openid-client.
 */
export function createOidcClient(o: OidcConfig, log: FastifyBaseLogger): OidcClient {
  let config: client.Configuration | null = null
  let timer: NodeJS.Timeout | null = null
  let stopped = false
  let resolveReady: () => void = () => {}
  const readyPromise = new Promise<void>((resolve) => {
    resolveReady = resolve
  })

  async function attempt(delayMs: number): Promise<void> {
    if (stopped) return
    try {
      config = await client.discovery(new URL(o.issuer), o.clientId, o.clientSecret === '' ? undefined : o.clientSecret, undefined, {
        timeout: 10,
        ...(o.allowHttpLoopback ? { execute: [client.allowInsecureRequests] } : {}),
      })
      log.info({ issuer: o.issuer }, 'single sign-on: provider discovered')
      resolveReady()
    } catch (err) {
      const e = err as { code?: unknown; name?: unknown }
      log.warn(
        { issuer: o.issuer, code: typeof e.code === 'string' ? e.code : null, error: String(e.name ?? 'Error'), retryInMs: delayMs },
        'single sign-on: discovery failed',
      )
      if (stopped) return
      timer = setTimeout(() => void attempt(Math.min(delayMs * 2, 300_000)), delayMs)
      timer.unref()
    }
  }
  void attempt(1000)

  return {
    configuration: () => config,
    ready: () => readyPromise,
    stop() {
      stopped = true
      if (timer) clearTimeout(timer)
    },
  }
}

import { createDomain, type Domain } from './domain/index.js'
import type { ResolvedOptions } from './options.js'
import type { VaultCrypto } from './vault-service.js'

/** The domain layer over the plugin's options: one wiring for the API, the pages and the MCP endpoint. */
export function createDomainFor(o: ResolvedOptions, crypto: VaultCrypto): Domain {
  return createDomain({
    storage: o.storage,
    crypto,
    hasKey: o.keyring !== null,
    plans: o.plans,
    now: o.now,
    importTtlMs: o.importTtlMs,
    people: o.people,
    ciAllowHttpLoopback: o.ciAllowHttpLoopbackIssuers,
    allowPrivateWebhooks: o.allowPrivateWebhooks,
  })
}

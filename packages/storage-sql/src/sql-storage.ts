import { onChanges, type Storage } from '@envkeep/env-api-plugin'
import { createAccessLogStore } from './access-log-store.js'
import type { ChangeWatch } from './changes.js'
import { createCiIdentityStore } from './ci-identity-store.js'
import { createClientRegistrationStore } from './client-registration-store.js'
import type { SqlRunner } from './dialect.js'
import { createHistoryStore } from './history-store.js'
import { createImportStore } from './import-store.js'
import { createKeyStore } from './key-store.js'
import { createOAuthStore } from './oauth-store.js'
import { createOverrideStore } from './override-store.js'
import { createPurge } from './purge.js'
import { createRateCounters } from './rate-counters.js'
import { createVaultStore } from './vault-store.js'
import { createWebhookStore } from './webhook-store.js'

/** What a backend adds to the core's stores: at least its `close()`, and whatever it exposes (its open database). */
interface Own {
  close(): Promise<void>
}

/**
 * The whole storage contract over one runner: every store of the core, the
 * change watch the backend hears other processes with (`changes`), and the
 * backend's own members (`own`). Every change made through it signals the
 * watch's listeners before it resolves; `close()` stops the watch, then
 * closes the backend.
 *
 * `sharedCounters` adds the request counters that make per-sign-in rate
 * limits hold across processes (a database several servers share).
 */
export function createSqlStorage<O extends Own>(
  s: SqlRunner,
  o: { readonly changes: ChangeWatch; readonly sharedCounters: boolean; readonly own: O },
): Storage & O & { watchChanges: NonNullable<Storage['watchChanges']> } {
  const { changes, own } = o
  return onChanges(
    {
      ...createVaultStore(s),
      ...createKeyStore(s),
      ...createAccessLogStore(s),
      ...createImportStore(s),
      ...createHistoryStore(s),
      ...createWebhookStore(s),
      ...createOverrideStore(s),
      ...createCiIdentityStore(s),
      ...createOAuthStore(s),
      ...createClientRegistrationStore(s),
      ...createPurge(s, { rateCounters: o.sharedCounters }),
      ...(o.sharedCounters ? createRateCounters(s) : {}),
      ...own,
      watchChanges: (listener: () => void) => changes.watch(listener),
      close: () => {
        changes.close()
        return own.close()
      },
    },
    () => changes.signal(),
  )
}

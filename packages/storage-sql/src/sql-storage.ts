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
 * `sharedCounters`: the backend shares the request counters of the core
 * (`createRateCounters`, in its `own`) so per-sign-in limits hold across
 * processes; the housekeeping purge then clears their old windows too.
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

import type { CiIdentityStore, Storage } from '@envkeep/env-api-plugin'
import { PostgresCiIdentityStore } from './ci-identity-store.js'
import { PostgresHistoryStore } from './history-store.js'
import { PostgresImportStore } from './import-store.js'
import { PostgresVaultAdminStore } from './vault-admin-store.js'
import { openPostgres, type OpenPostgres, type PostgresOptions } from './database.js'
import { PostgresOAuthStore } from './oauth-store.js'
import { PostgresVaultStore } from './vault-store.js'
import { PostgresRateCounters } from './rate-counters.js'
import { PostgresWebhookStore } from './webhook-store.js'

export interface PostgresStorage extends Storage, CiIdentityStore {
  countRequest: NonNullable<Storage['countRequest']>
  peekRequests: NonNullable<Storage['peekRequests']>
  forgetRequests: NonNullable<Storage['forgetRequests']>
  /** the open pool and kysely instance, for the server's own stores (accounts) and tests */
  readonly database: OpenPostgres
  close(): Promise<void>
}

/** Opens the pool (running migrations) and returns the storage adapter over it. */
export async function createPostgresStorage(options: PostgresOptions): Promise<PostgresStorage> {
  const database = await openPostgres(options)
  const parts = [
    new PostgresVaultStore(database.db),
    new PostgresOAuthStore(database.db),
    new PostgresCiIdentityStore(database.db),
    new PostgresHistoryStore(database.db),
    new PostgresImportStore(database.db),
    new PostgresVaultAdminStore(database.db),
    new PostgresWebhookStore(database.db),
    new PostgresRateCounters(database.db),
  ]
  const storage: Record<string, unknown> = Object.create(null) as Record<string, unknown>
  for (const part of parts) {
    for (const k of Object.getOwnPropertyNames(Object.getPrototypeOf(part))) {
      if (k === 'constructor') continue
      const v = (part as unknown as Record<string, unknown>)[k]
      if (typeof v === 'function') storage[k] = (v as (...a: unknown[]) => unknown).bind(part)
    }
  }
  storage.database = database
  storage.close = () => database.close()
  return storage as unknown as PostgresStorage
}

import { boundMethods, type CiIdentityStore, type Storage } from '@envkeep/env-api-plugin'
import { createClientRegistrationStore, createKeyStore, createOverrideStore, createVaultStore } from '@envkeep/storage-sql'
import { PostgresCiIdentityStore } from './ci-identity-store.js'
import { PostgresHistoryStore } from './history-store.js'
import { PostgresImportStore } from './import-store.js'
import { openPostgres, type OpenPostgres, type PostgresOptions } from './database.js'
import { PostgresOAuthStore } from './oauth-store.js'
import { createPostgresRunner } from './sql-runner.js'
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
  const sql = createPostgresRunner(database)
  return {
    ...boundMethods(new PostgresVaultStore(database.db)),
    ...boundMethods(new PostgresOAuthStore(database.db)),
    ...boundMethods(new PostgresCiIdentityStore(database.db)),
    ...boundMethods(new PostgresHistoryStore(database.db)),
    ...boundMethods(new PostgresImportStore(database.db)),
    ...boundMethods(new PostgresWebhookStore(database.db)),
    ...createOverrideStore(sql),
    ...createVaultStore(sql),
    ...createKeyStore(sql),
    ...boundMethods(new PostgresRateCounters(database.db)),
    ...createClientRegistrationStore(sql),
    database,
    close: () => database.close(),
  } satisfies PostgresStorage
}

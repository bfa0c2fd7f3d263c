import { boundMethods, type CiIdentityStore, type Storage } from '@envkeep/env-api-plugin'
import { createAccessLogStore, createClientRegistrationStore, createHistoryStore, createImportStore, createOverrideStore } from '@envkeep/storage-sql'
import { PostgresCiIdentityStore } from './ci-identity-store.js'
import { PostgresVaultAdminStore } from './vault-admin-store.js'
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
    ...boundMethods(new PostgresVaultAdminStore(database.db)),
    ...boundMethods(new PostgresWebhookStore(database.db)),
    ...createOverrideStore(sql),
    ...createAccessLogStore(sql),
    ...createImportStore(sql),
    ...createHistoryStore(sql),
    ...boundMethods(new PostgresRateCounters(database.db)),
    ...createClientRegistrationStore(sql),
    database,
    close: () => database.close(),
  } satisfies PostgresStorage
}

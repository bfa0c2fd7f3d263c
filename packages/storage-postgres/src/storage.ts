import { boundMethods, type Storage } from '@envkeep/env-api-plugin'
import {
  createCiIdentityStore,
  createClientRegistrationStore,
  createKeyStore,
  createOAuthStore,
  createOverrideStore,
  createPurge,
  createRateCounters,
  createVaultStore,
  createWebhookStore,
} from '@envkeep/storage-sql'
import { PostgresHistoryStore } from './history-store.js'
import { PostgresImportStore } from './import-store.js'
import { openPostgres, type OpenPostgres, type PostgresOptions } from './database.js'
import { createPostgresRunner } from './sql-runner.js'
import { PostgresVaultStore } from './vault-store.js'

export interface PostgresStorage extends Storage {
  countRequest: NonNullable<Storage['countRequest']>
  peekRequests: NonNullable<Storage['peekRequests']>
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
    ...createOAuthStore(sql),
    ...createCiIdentityStore(sql),
    ...boundMethods(new PostgresHistoryStore(database.db)),
    ...boundMethods(new PostgresImportStore(database.db)),
    ...createWebhookStore(sql),
    ...createOverrideStore(sql),
    ...createVaultStore(sql),
    ...createKeyStore(sql),
    ...createRateCounters(sql),
    ...createPurge(sql, { rateCounters: true }),
    ...createClientRegistrationStore(sql),
    database,
    close: () => database.close(),
  } satisfies PostgresStorage
}

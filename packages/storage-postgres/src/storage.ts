import { boundMethods, type Storage } from '@envkeep/env-api-plugin'
import {
  createAccessLogStore,
  createCiIdentityStore,
  createClientRegistrationStore,
  createHistoryStore,
  createImportStore,
  createOAuthStore,
  createOverrideStore,
  createPurge,
  createRateCounters,
  createWebhookStore,
} from '@envkeep/storage-sql'
import { PostgresVaultAdminStore } from './vault-admin-store.js'
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
    ...boundMethods(new PostgresVaultAdminStore(database.db)),
    ...createWebhookStore(sql),
    ...createOverrideStore(sql),
    ...createAccessLogStore(sql),
    ...createImportStore(sql),
    ...createHistoryStore(sql),
    ...createRateCounters(sql),
    ...createPurge(sql, { rateCounters: true }),
    ...createClientRegistrationStore(sql),
    database,
    close: () => database.close(),
  } satisfies PostgresStorage
}

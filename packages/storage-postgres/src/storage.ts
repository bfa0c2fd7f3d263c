import type { Storage } from '@envkeep/env-api-plugin'
import {
  createAccessLogStore,
  createCiIdentityStore,
  createClientRegistrationStore,
  createHistoryStore,
  createImportStore,
  createKeyStore,
  createOAuthStore,
  createOverrideStore,
  createPurge,
  createRateCounters,
  createVaultStore,
  createWebhookStore,
} from '@envkeep/storage-sql'
import { openPostgres, type OpenPostgres, type PostgresOptions } from './database.js'
import { createPostgresRunner } from './sql-runner.js'

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
    ...createOAuthStore(sql),
    ...createCiIdentityStore(sql),
    ...createWebhookStore(sql),
    ...createOverrideStore(sql),
    ...createAccessLogStore(sql),
    ...createImportStore(sql),
    ...createHistoryStore(sql),
    ...createVaultStore(sql),
    ...createKeyStore(sql),
    ...createRateCounters(sql),
    ...createPurge(sql, { rateCounters: true }),
    ...createClientRegistrationStore(sql),
    database,
    close: () => database.close(),
  } satisfies PostgresStorage
}

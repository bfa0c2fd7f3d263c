import { onChanges, type Storage } from '@envkeep/env-api-plugin'
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
import { createPostgresChangeListener } from './change-listener.js'

export interface PostgresStorage extends Storage {
  countRequest: NonNullable<Storage['countRequest']>
  peekRequests: NonNullable<Storage['peekRequests']>
  watchChanges: NonNullable<Storage['watchChanges']>
  /** the open pool and kysely instance, for the server's own stores (accounts) and tests */
  readonly database: OpenPostgres
  close(): Promise<void>
}

/** Opens the pool (running migrations) and returns the storage adapter over it. */
export async function createPostgresStorage(options: PostgresOptions): Promise<PostgresStorage> {
  const database = await openPostgres(options)
  const sql = createPostgresRunner(database)
  const changes = createPostgresChangeListener(database, sql)
  // every change made through this store is heard at once by its listeners, before it resolves
  return onChanges(
    {
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
      watchChanges: (listener) => changes.watch(listener),
      database,
      close: () => {
        changes.close()
        return database.close()
      },
    } satisfies PostgresStorage,
    () => changes.signal(),
  )
}

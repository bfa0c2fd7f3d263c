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
  createVaultStore,
  createWebhookStore,
} from '@envkeep/storage-sql'
import { openDatabase, type OpenDatabase, type OpenOptions } from './database.js'
import { createSqliteRunner } from './sql-runner.js'
import { createSqliteChangeWatch } from './change-watch.js'

export interface SqliteStorage extends Storage {
  watchChanges: NonNullable<Storage['watchChanges']>
  /** the open database, for the server's own stores (accounts) and tests */
  readonly database: OpenDatabase
  close(): Promise<void>
}

/** Opens the database (running migrations) and returns the storage adapter over it. */
export async function createSqliteStorage(options: OpenOptions): Promise<SqliteStorage> {
  const database = await openDatabase(options)
  const sql = createSqliteRunner(database)
  const changes = createSqliteChangeWatch(sql)
  // every change made through this store is heard at once by its listeners, before it resolves
  return onChanges(
    {
      ...createOAuthStore(sql),
      ...createCiIdentityStore(sql),
      ...createWebhookStore(sql),
      ...createPurge(sql, { rateCounters: false }),
      ...createClientRegistrationStore(sql),
      ...createOverrideStore(sql),
      ...createAccessLogStore(sql),
      ...createImportStore(sql),
      ...createHistoryStore(sql),
      ...createVaultStore(sql),
      ...createKeyStore(sql),
      watchChanges: (listener) => changes.watch(listener),
      database,
      close: () => {
        changes.close()
        return database.close()
      },
    } satisfies SqliteStorage,
    () => changes.signal(),
  )
}

import { boundMethods, type Storage } from '@envkeep/env-api-plugin'
import { createClientRegistrationStore, createKeyStore, createOverrideStore, createVaultStore } from '@envkeep/storage-sql'
import { openDatabase, type OpenDatabase, type OpenOptions } from './database.js'
import { createSqliteCiIdentityStore } from './ci-identity-store.js'
import { createSqliteHistoryStore } from './history-store.js'
import { createSqliteOAuthStore } from './oauth-store.js'
import { createSqliteRunner } from './sql-runner.js'
import { createSqliteVaultStore } from './vault-store.js'
import { createSqliteWebhookStore } from './webhook-store.js'

export interface SqliteStorage extends Storage {
  /** the open database, for the server's own stores (accounts) and tests */
  readonly database: OpenDatabase
  close(): Promise<void>
}

/** Opens the database (running migrations) and returns the storage adapter over it. */
export async function createSqliteStorage(options: OpenOptions): Promise<SqliteStorage> {
  const database = await openDatabase(options)
  const sql = createSqliteRunner(database)
  return {
    ...createSqliteVaultStore(database),
    ...createSqliteOAuthStore(database),
    ...createSqliteCiIdentityStore(database),
    ...boundMethods(createSqliteHistoryStore(database)),
    ...boundMethods(createSqliteWebhookStore(database)),
    ...createClientRegistrationStore(sql),
    ...createOverrideStore(sql),
    ...createVaultStore(sql),
    ...createKeyStore(sql),
    database,
    close: () => database.close(),
  } satisfies SqliteStorage
}

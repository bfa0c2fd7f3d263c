import { boundMethods, type Storage } from '@envkeep/env-api-plugin'
import { openDatabase, type OpenDatabase, type OpenOptions } from './database.js'
import { createSqliteCiIdentityStore } from './ci-identity-store.js'
import { createSqliteClientRegistrationStore } from './client-registration-store.js'
import { createSqliteHistoryStore } from './history-store.js'
import { createSqliteOAuthStore } from './oauth-store.js'
import { createSqliteOverrideStore } from './override-store.js'
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
  return {
    ...createSqliteVaultStore(database),
    ...createSqliteOAuthStore(database),
    ...createSqliteCiIdentityStore(database),
    ...boundMethods(createSqliteHistoryStore(database)),
    ...boundMethods(createSqliteWebhookStore(database)),
    ...createSqliteClientRegistrationStore(database),
    ...boundMethods(createSqliteOverrideStore(database)),
    database,
    close: () => database.close(),
  } satisfies SqliteStorage
}

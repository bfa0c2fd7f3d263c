import type { CiIdentityStore, Storage } from '@envkeep/env-api-plugin'
import { createPostgresStorage } from '@envkeep/storage-postgres'
import { createSqliteStorage } from '@envkeep/storage-sqlite'
import type { AccountStore } from './accounts/account-store.js'
import { createPostgresAccountStore } from './accounts/postgres-account-store.js'
import { createSqliteAccountStore } from './accounts/sqlite-account-store.js'
import type { ServerConfig } from './config.js'

export interface Stores {
  readonly storage: Storage & CiIdentityStore
  readonly accounts: AccountStore
  /** 'sqlite' (the file in the data directory) or 'postgres' (ENVKEEP_DATABASE_URL) */
  readonly kind: 'sqlite' | 'postgres'
  close(): Promise<void>
}

/**
 * The storage and the server's accounts, on the configured database: PostgreSQL when
 * --database-url / ENVKEEP_DATABASE_URL is given (pool ENVKEEP_DATABASE_POOL), else the
 * embedded SQLite file in the data directory. Migrations run on open, on either.
 */
export async function openStores(config: ServerConfig, o: { busyTimeoutMs?: number } = {}): Promise<Stores> {
  if (config.databaseUrl) {
    const storage = await createPostgresStorage({ connectionString: config.databaseUrl, pool: config.databasePool })
    try {
      const accounts = await createPostgresAccountStore(storage.database)
      return { storage, accounts, kind: 'postgres', close: () => storage.close() }
    } catch (err) {
      await storage.close()
      throw err
    }
  }
  const storage = await createSqliteStorage({ filename: config.databaseFile, ...(o.busyTimeoutMs ? { busyTimeoutMs: o.busyTimeoutMs } : {}) })
  try {
    const accounts = await createSqliteAccountStore(storage.database)
    return { storage, accounts, kind: 'sqlite', close: () => storage.close() }
  } catch (err) {
    await storage.close()
    throw err
  }
}

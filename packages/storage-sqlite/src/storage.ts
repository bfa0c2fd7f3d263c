import type { Storage } from '@envkeep/env-api-plugin'
import { openDatabase, type OpenDatabase, type OpenOptions } from './database.js'
import { createSqliteCiIdentityStore } from './ci-identity-store.js'
import { createSqliteClientRegistrationStore } from './client-registration-store.js'
import { createSqliteHistoryStore } from './history-store.js'
import { createSqliteOAuthStore } from './oauth-store.js'
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
  const vaults = createSqliteVaultStore(database)
  const oauth = createSqliteOAuthStore(database)
  const ci = createSqliteCiIdentityStore(database)
  const storage = Object.assign(
    Object.create(null) as object,
    vaults,
    bindAll(oauth),
    ci,
    bindAll(createSqliteHistoryStore(database)),
    bindAll(createSqliteWebhookStore(database)),
    createSqliteClientRegistrationStore(database),
    {
      database,
      close: () => database.close(),
    },
  )
  return storage as SqliteStorage
}

function bindAll<T extends object>(o: T): T {
  const out: Record<string, unknown> = {}
  let proto: object | null = o
  const seen = new Set<string>()
  while (proto && proto !== Object.prototype) {
    for (const k of Object.getOwnPropertyNames(proto)) {
      if (k === 'constructor' || seen.has(k)) continue
      seen.add(k)
      const v = (o as Record<string, unknown>)[k]
      if (typeof v === 'function') out[k] = (v as (...a: unknown[]) => unknown).bind(o)
    }
    proto = Object.getPrototypeOf(proto) as object | null
  }
  return out as T
}

import type { Storage } from '../adapters/storage.js'
import { MemoryDb, varKey, type MemoryDbOptions, type State } from './memory-state.js'
import { MemoryClientRegistrationStore } from './memory-client-registration-store.js'
import { MemoryCiIdentityStore } from './memory-ci-identity-store.js'
import { MemoryHistoryStore } from './memory-history-store.js'
import { MemoryImportStore } from './memory-import-store.js'
import { MemoryOAuthStore } from './memory-oauth-store.js'
import { MemoryOverrideStore } from './memory-override-store.js'
import { MemoryVaultStore } from './memory-vault-store.js'
import { MemoryWebhookStore } from './memory-webhook-store.js'
import type { VaultStoreProbe } from './vault-store-contract.js'
import { onChanges } from '../cache/change-kinds.js'

export interface MemoryStorageOptions extends MemoryDbOptions {}

/** The memory store's data, for tests that change it behind the store's back (as SQL would). */
export type MemoryState = State

/** The reference store: the whole storage contract in memory, with the contract suite's probe. */
export interface MemoryStorage extends Storage {
  /** looks at the data directly and breaks chosen writes (see the contract suite) */
  readonly probe: VaultStoreProbe
  /**
   * Changes the stored data behind the store's back, in one transaction (a
   * test's tampering, or a setting no method changes yet). Rows are frozen:
   * replace them (`map.set(key, { ...row, field })`), do not edit them.
   */
  edit(fn: (state: MemoryState) => void): Promise<void>
  /** later calls throw StorageError 08006, as with a closed database */
  close(): Promise<void>
}

/**
 * The reference implementation of the storage contract, for tests, examples
 * and as the model for a new backend (docs/storage-contract.md). Nothing
 * survives the process. `yieldBetweenSteps: true` makes every transaction
 * yield to the event loop between its steps, like a networked database, to
 * prove that the service's rules hold inside storage's transactions.
 */
export function createMemoryStorage(options: MemoryStorageOptions = {}): MemoryStorage {
  const db = new MemoryDb(options)
  const storage = Object.assign(
    Object.create(null) as object,
    bindAll(new MemoryVaultStore(db)),
    bindAll(new MemoryOAuthStore(db)),
    bindAll(new MemoryCiIdentityStore(db)),
    bindAll(new MemoryHistoryStore(db)),
    bindAll(new MemoryImportStore(db)),
    bindAll(new MemoryWebhookStore(db)),
    bindAll(new MemoryClientRegistrationStore()),
    bindAll(new MemoryOverrideStore(db)),
    {
      probe: memoryProbe(db),
      edit: (fn: (state: MemoryState) => void) => db.write('edit', fn),
      close: async () => db.close(),
    },
  )
  // watchChanges (issue 20): this store is its database, so its listeners hear its own changes
  // (every method that may change cached data, and edit), once each settles, before it resolves
  const listeners = new Set<() => void>()
  const notify = (): void => {
    for (const l of [...listeners]) l()
  }
  return Object.assign(onChanges(storage, notify), {
    watchChanges(listener: () => void): () => void {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
  }) as MemoryStorage
}

function memoryProbe(db: MemoryDb): VaultStoreProbe {
  return {
    stagedValueCount: async (importId) => db.committed.importValues.get(importId)?.size ?? 0,
    variableCount: async (vaultId, environment) => db.committed.variables.get(varKey(vaultId, environment))?.size ?? 0,
    importCount: async (vaultId) => [...db.committed.imports.values()].filter((i) => i.vaultId === vaultId).length,
    accessLogCount: async (vaultId) => db.committed.accessLog.filter((r) => r.vaultId === vaultId).length,
    lockWaiters: async () => db.waitingWriters,
    async breakWrites(what, name) {
      const rule = { what, name }
      db.broken.push(rule)
      return async () => {
        const i = db.broken.indexOf(rule)
        if (i >= 0) db.broken.splice(i, 1)
      }
    },
  }
}

/** Own and prototype methods of a class instance, bound, as plain properties. */
function bindAll<T extends object>(o: T): T {
  const out: Record<string, unknown> = {}
  for (let proto = Object.getPrototypeOf(o) as object | null; proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto) as object | null) {
    for (const k of Object.getOwnPropertyNames(proto)) {
      const v = (o as Record<string, unknown>)[k]
      if (k !== 'constructor' && !(k in out) && typeof v === 'function') out[k] = (v as (...a: unknown[]) => unknown).bind(o)
    }
  }
  return out as T
}

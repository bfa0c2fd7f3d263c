import type { VaultStore } from '@envkeep/env-api-plugin'
import type { OpenDatabase } from './database.js'

/** Placeholder: the API storage work (issue 2) implements every method. */
export function createSqliteVaultStore(_d: OpenDatabase): VaultStore {
  return new Proxy({} as VaultStore, {
    get(_t, p) {
      return () => Promise.reject(new Error(`vault store: ${String(p)} not implemented yet`))
    },
  })
}

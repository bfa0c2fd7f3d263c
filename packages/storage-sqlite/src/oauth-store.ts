import type { OAuthStore } from '@envkeep/env-api-plugin'
import type { OpenDatabase } from './database.js'

/** Placeholder: the OAuth work (issue 3) implements every method. */
export function createSqliteOAuthStore(_d: OpenDatabase): OAuthStore {
  return new Proxy({} as OAuthStore, {
    get(_t, p) {
      return () => Promise.reject(new Error(`oauth store: ${String(p)} not implemented yet`))
    },
  })
}

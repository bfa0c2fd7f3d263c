import type { OAuthStore } from './oauth-store.js'
import type { VaultStore } from './vault-store.js'

export type * from './oauth-store.js'
export type * from './vault-store.js'

/** Everything the plugin stores. One object implements both halves. */
export interface Storage extends VaultStore, OAuthStore {}

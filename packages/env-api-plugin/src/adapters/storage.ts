import type { CiIdentityStore } from './ci-identity-store.js'
import type { OAuthStore } from './oauth-store.js'
import type { VaultStore } from './vault-store.js'

export type * from './ci-identity-store.js'
export type * from './oauth-store.js'
export type * from './vault-store.js'

/** Everything the plugin stores. One object implements every part. */
export interface Storage extends VaultStore, OAuthStore, CiIdentityStore {}

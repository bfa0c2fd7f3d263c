import type { PeopleAdapter } from '../adapters/people.js'
import type { Storage, StorageLimit } from '../adapters/storage.js'
import type { VaultCrypto } from '../vault-service.js'
import type { ResolveHost } from './webhook-url.js'

/** What the domain works with; built once per plugin instance by createEnvkeepCore (core.ts). */
export interface DomainDeps {
  readonly storage: Storage
  /** seals and opens values; answers 503 not_configured without a key */
  readonly crypto: VaultCrypto
  /** false when the server has no master key: value operations answer not_configured before touching storage */
  readonly hasKey: boolean
  /** storage limits by plan name */
  readonly plans: Readonly<Record<string, StorageLimit>>
  readonly now: () => Date
  /** lifetime of a pending push */
  readonly importTtlMs: number
  /** days versions are kept in history (housekeeping's retention) */
  readonly historyDays?: number
  /** finds the person to add as a member; the optional invitation hooks, when the host has them */
  readonly people: Pick<PeopleAdapter, 'findPersonByEmail' | 'invite' | 'invitesAccounts' | 'listInvitations' | 'revokeInvitation'>
  /** `ENVKEEP_CI_ALLOW_HTTP_ISSUERS=loopback`: CI identities may name `http://127.0.0.1:*` issuers (tests only) */
  readonly ciAllowHttpLoopback?: boolean
  /** `ENVKEEP_WEBHOOK_ALLOW_PRIVATE=true`: webhooks may call private, loopback and link-local addresses */
  readonly allowPrivateWebhooks?: boolean
  /** how a webhook URL's host is resolved (default: the system's resolver); for tests */
  readonly resolveHost?: ResolveHost
}

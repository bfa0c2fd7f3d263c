import type { Keyring } from './adapters/keyring.js'
import type { PeopleAdapter } from './adapters/people.js'
import type { Storage, StorageLimit } from './adapters/storage.js'
import type { DomainDeps } from './domain/deps.js'
import { createDomain, type Domain } from './domain/index.js'
import { createVaultCrypto, type VaultCrypto } from './vault-service.js'
import { createCoreCache, type CacheSizes } from './cache/cached-storage.js'
import type { ResolveHost } from './domain/webhook-url.js'

/**
 * One core per plugin instance (issue 19): the domain layer, the crypto
 * with its data-key cache, and (issue 20) the caches, built once here and
 * handed to the API, the pages, the webhook worker and housekeeping, and
 * to the server's own pages and admin commands. Every surface reads and
 * writes through `core.domain` (or `core.storage`); no surface builds a
 * domain or a VaultCrypto of its own. Issue 20's caches (sign-ins by token
 * hash, vault access, environments, sealed rows: cache/cached-storage.ts)
 * live here beside the data keys of `crypto`, so that one invalidation
 * reaches every surface.
 */
export interface EnvkeepCore {
  /** the rules: every read and write of every surface */
  readonly domain: Domain
  /** envelope encryption of this core (one data-key cache) */
  readonly crypto: VaultCrypto
  /**
   * The storage every surface uses (issue 20): `base` behind the core's caches. Its reads of
   * sign-ins, vault access, environments and sealed rows are cached; its changes empty the
   * caches before they resolve; the storage's `watchChanges` empties them for other processes' changes.
   */
  readonly storage: Storage
  /** the storage the core was built over (the `storage` option) */
  readonly base: Storage
  /** what the caches hold now (tests and metrics) */
  cacheSizes(): CacheSizes
  /** stops listening to the storage's changes (closing the storage does it too) */
  close(): void
  readonly keyring: Keyring | null
  readonly now: () => Date
  readonly settings: CoreSettings
}

/** What the domain asks of the people adapter: finding a person to add, and the optional invitation hooks. */
export type DomainPeople = Pick<PeopleAdapter, 'findPersonByEmail'> & Partial<Pick<PeopleAdapter, 'invite' | 'listInvitations' | 'revokeInvitation'>>

export interface CoreOptions {
  readonly storage: Storage
  /** wraps per-vault data keys; `null` when the server has no key (value operations fail with not_configured) */
  readonly keyring: Keyring | null
  readonly people: DomainPeople
  /** clock, injectable for tests */
  readonly now?: () => Date
  /** lifetime of a pending push; default 7 days */
  readonly importTtlMs?: number
  /** days versions are kept in history (each variable's last 10 are kept whatever their age); default 365 */
  readonly historyDays?: number
  /** storage limits per plan; default `{ 'self-hosted': { maxVariables: 10000, maxBytes: 20 MiB } }` */
  readonly plans?: Readonly<Record<string, StorageLimit>>
  /** CI identities may name `http://127.0.0.1:*` issuers (tests only) */
  readonly ciAllowHttpLoopbackIssuers?: boolean
  /** webhooks may call private, loopback and link-local addresses */
  readonly allowPrivateWebhooks?: boolean
  /** how a webhook URL's host is resolved (default: the system's resolver); for tests */
  readonly resolveHost?: ResolveHost
}

export interface CoreSettings {
  readonly importTtlMs: number
  readonly historyDays: number
  readonly plans: Readonly<Record<string, StorageLimit>>
  readonly ciAllowHttpLoopbackIssuers: boolean
  readonly allowPrivateWebhooks: boolean
}

const DAY = 24 * 60 * 60 * 1000

/** A positive number option, or its default; a bad one never boots. */
export function positive(name: string, v: number | undefined, dflt: number): number {
  if (v === undefined) return dflt
  if (!Number.isFinite(v) || v <= 0) throw new TypeError(`envkeep: option ${name} must be a positive number`)
  return v
}

/** The core's settings, checked, defaulted and frozen (shared with the plugin's resolveOptions). */
export function resolveCoreSettings(o: Omit<CoreOptions, 'storage' | 'keyring' | 'people'>): CoreSettings {
  const plans = o.plans ?? { 'self-hosted': { maxVariables: 10_000, maxBytes: 20 * 1024 * 1024 } }
  return Object.freeze({
    importTtlMs: positive('importTtlMs', o.importTtlMs, 7 * DAY),
    historyDays: positive('historyDays', o.historyDays, 365),
    plans: Object.freeze({ ...plans }),
    ciAllowHttpLoopbackIssuers: o.ciAllowHttpLoopbackIssuers === true,
    allowPrivateWebhooks: o.allowPrivateWebhooks === true,
  })
}

/** Builds the core: the domain and its crypto, once. */
export function createEnvkeepCore(o: CoreOptions): EnvkeepCore {
  if (!o || typeof o !== 'object') throw new TypeError('envkeep: options are required')
  if (!o.storage) throw new TypeError('envkeep: option storage is required')
  if (!o.people) throw new TypeError('envkeep: option people is required')
  if (o.keyring === undefined) throw new TypeError('envkeep: option keyring is required (null when there is no key)')
  const settings = resolveCoreSettings(o)
  const now = o.now ?? (() => new Date())
  // every change empties the caches and drops the data keys in use (an unchanged wrap is not unwrapped again)
  let crypto: VaultCrypto | null = null
  const cache = createCoreCache(o.storage, { onInvalidate: () => crypto?.forget() })
  const storage = cache.storage
  crypto = createVaultCrypto(storage, o.keyring)
  const deps: DomainDeps = {
    storage,
    crypto,
    hasKey: o.keyring !== null,
    plans: settings.plans,
    now,
    importTtlMs: settings.importTtlMs,
    historyDays: settings.historyDays,
    people: o.people,
    ciAllowHttpLoopback: settings.ciAllowHttpLoopbackIssuers,
    allowPrivateWebhooks: settings.allowPrivateWebhooks,
    ...(o.resolveHost ? { resolveHost: o.resolveHost } : {}),
  }
  return Object.freeze({
    domain: createDomain(deps),
    crypto,
    storage,
    base: o.storage,
    cacheSizes: () => cache.sizes(),
    close: () => cache.close(),
    keyring: o.keyring,
    now,
    settings,
  })
}

import type { Keyring } from './adapters/keyring.js'
import { safeObserver, type EnvApiObserver } from './adapters/observer.js'
import type { PeopleAdapter } from './adapters/people.js'
import type { Storage, StorageLimit } from './adapters/storage.js'
import { createEnvkeepCore, positive, type EnvkeepCore } from './core.js'

export interface EnvApiOptions {
  /** Public base URL of the service, e.g. `https://envkeep.example.com`; the OAuth issuer, exactly. */
  baseUrl: string
  storage: Storage
  /** Wraps per-vault data keys; `null` when the server has no key (value routes answer 503). */
  keyring: Keyring | null
  people: PeopleAdapter
  /**
   * The core (createEnvkeepCore) over the same storage and keyring, when the host shares it
   * with its own pages or commands; default: the plugin builds its own. Its settings (`now`,
   * `importTtlMs`, `historyDays`, `plans`, `ciAllowHttpLoopbackIssuers`, `allowPrivateWebhooks`)
   * are the ones used: any of them given here too must be the same, or the plugin refuses to boot.
   */
  core?: EnvkeepCore
  /** `realm` of WWW-Authenticate and the name on pages. Default `envkeep`. */
  serviceName?: string
  /** Clock, injectable for tests. */
  now?: () => Date
  /** Lifetime of a pending push. Default 7 days. */
  importTtlMs?: number
  /** Days versions are kept in history (each variable's last 10 are kept whatever their age). Default 365. */
  historyDays?: number
  /** Per sign-in request limits across /api/env. Default 60 a minute, 5000 a day. */
  rateLimit?: { perMinute?: number; perDay?: number }
  /** Storage limits per plan. Default `{ 'self-hosted': { maxVariables: 10000, maxBytes: 20 MiB } }`. */
  plans?: Record<string, StorageLimit>
  /** Access token lifetime. Default 1 hour. */
  accessTokenTtlMs?: number
  /** Absolute sign-in lifetime. Default 365 days. */
  signInTtlMs?: number
  /** Idle sign-ins end after this. Default 90 days. */
  signInIdleMs?: number
  /** Authorization code lifetime. Default 60 seconds. */
  codeTtlMs?: number
  /**
   * CI identities may name plain-http issuers on `http://127.0.0.1:<port>`
   * (`ENVKEEP_CI_ALLOW_HTTP_ISSUERS=loopback`): for tests only. Default false: https only.
   */
  ciAllowHttpLoopbackIssuers?: boolean
  /**
   * Webhooks may call private, loopback and link-local addresses
   * (`ENVKEEP_WEBHOOK_ALLOW_PRIVATE=true`). Default false: public addresses
   * only, checked when a webhook is added and at every delivery.
   */
  allowPrivateWebhooks?: boolean
  /** How often the webhook worker looks for due deliveries. Default 2 seconds. */
  webhookIntervalMs?: number
  /**
   * How often pending pushes past their end are expired (and their `push.expired`
   * deliveries enqueued at once). Default 5 seconds: one indexed update.
   */
  expiryIntervalMs?: number
  /** Told about token checks, API outcomes and webhook deliveries (for metrics). Default: nobody. */
  observer?: EnvApiObserver
  /**
   * The MCP endpoint at `{baseUrl}/mcp` with its own OAuth resource, client
   * registration (metadata documents and RFC 7591) and consent. Default off
   * in the plugin (an embedding app opts in); `envkeep-server` turns it on.
   * `allowHttpLoopbackClients` (`ENVKEEP_MCP_ALLOW_HTTP_CLIENTS=loopback`)
   * admits client metadata documents at `http://127.0.0.1:<port>`: for tests only.
   */
  mcp?: boolean | { allowHttpLoopbackClients?: boolean }
}

/** The MCP endpoint's settings, once on. */
export interface McpSettings {
  /** `{baseUrl}/mcp`: the resource its tokens are bound to */
  readonly resource: string
  /** the route path: `{basePath}/mcp` */
  readonly path: string
  /** `{origin}/.well-known/oauth-protected-resource{path}/mcp` */
  readonly resourceMetadataUrl: string
  readonly allowHttpLoopbackClients: boolean
}

export interface ResolvedOptions {
  readonly baseUrl: string
  readonly storage: Storage
  readonly keyring: Keyring | null
  readonly people: PeopleAdapter
  /** the one core of this plugin instance: every surface reads and writes through `core.domain` */
  readonly core: EnvkeepCore
  readonly serviceName: string
  readonly now: () => Date
  readonly importTtlMs: number
  readonly historyDays: number
  readonly rateLimit: { readonly perMinute: number; readonly perDay: number }
  readonly plans: Readonly<Record<string, StorageLimit>>
  readonly accessTokenTtlMs: number
  readonly signInTtlMs: number
  readonly signInIdleMs: number
  readonly codeTtlMs: number
  readonly ciAllowHttpLoopbackIssuers: boolean
  readonly allowPrivateWebhooks: boolean
  readonly webhookIntervalMs: number
  readonly expiryIntervalMs: number
  readonly observer: Required<EnvApiObserver>
  /** `{baseUrl}/api/env` */
  readonly resource: string
  /** `{baseUrl}/cli/oauth-client.json` */
  readonly cliClientId: string
  /** `{origin}/.well-known/oauth-protected-resource{path}/api/env` */
  readonly resourceMetadataUrl: string
  /** cookies get `Secure` behind https */
  readonly secureCookies: boolean
  /** the path part of baseUrl ('' at the root), for routes served by the plugin */
  readonly basePath: string
  /** the MCP endpoint, or null when it is off */
  readonly mcp: McpSettings | null
}

const DAY = 24 * 60 * 60 * 1000
export const PUSH_BODY_LIMIT = 1_048_576

/** The given core, checked against the options, or a new one built from them. */
function coreOf(o: EnvApiOptions): EnvkeepCore {
  if (!o.core) return createEnvkeepCore(o)
  const core = o.core
  if (core.base !== o.storage || core.keyring !== o.keyring)
    throw new TypeError('envkeep: option core must be built over the same storage and keyring as the plugin')
  // a setting given both here and on the core must be the same: the domain uses the core's
  const s = core.settings
  const differ = [
    o.now !== undefined && o.now !== core.now ? 'now' : '',
    o.importTtlMs !== undefined && o.importTtlMs !== s.importTtlMs ? 'importTtlMs' : '',
    o.historyDays !== undefined && o.historyDays !== s.historyDays ? 'historyDays' : '',
    o.plans !== undefined && !samePlans(o.plans, s.plans) ? 'plans' : '',
    o.ciAllowHttpLoopbackIssuers !== undefined && o.ciAllowHttpLoopbackIssuers !== s.ciAllowHttpLoopbackIssuers ? 'ciAllowHttpLoopbackIssuers' : '',
    o.allowPrivateWebhooks !== undefined && o.allowPrivateWebhooks !== s.allowPrivateWebhooks ? 'allowPrivateWebhooks' : '',
  ].filter(Boolean)
  if (differ.length > 0) throw new TypeError(`envkeep: option ${differ.join(', ')} differs from the core's (createEnvkeepCore); give it once, on the core`)
  return core
}

function samePlans(a: Readonly<Record<string, StorageLimit>>, b: Readonly<Record<string, StorageLimit>>): boolean {
  const names = Object.keys(a)
  if (names.length !== Object.keys(b).length) return false
  return names.every((n) => Object.hasOwn(b, n) && a[n]?.maxVariables === b[n]?.maxVariables && a[n]?.maxBytes === b[n]?.maxBytes)
}

/** Validates, defaults and freezes the options; a bad config never boots. */
export function resolveOptions(o: EnvApiOptions): ResolvedOptions {
  if (!o || typeof o !== 'object') throw new TypeError('envkeep: options are required')
  let url: URL
  try {
    url = new URL(o.baseUrl)
  } catch {
    throw new TypeError('envkeep: option baseUrl must be an absolute URL')
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new TypeError('envkeep: baseUrl must be http(s)')
  if (url.search || url.hash || url.username || url.password || o.baseUrl.endsWith('/'))
    throw new TypeError('envkeep: baseUrl must have no query, fragment, credentials or trailing slash')
  if (!o.storage) throw new TypeError('envkeep: option storage is required')
  if (!o.people) throw new TypeError('envkeep: option people is required')
  if (o.keyring === undefined) throw new TypeError('envkeep: option keyring is required (null when there is no key)')
  const baseUrl = o.baseUrl
  const basePath = url.pathname === '/' ? '' : url.pathname
  const core = coreOf(o)
  const { settings } = core
  return Object.freeze({
    baseUrl,
    // the core's: cached reads, and changes that empty the caches at once (issue 20)
    storage: core.storage,
    keyring: o.keyring,
    people: o.people,
    core,
    serviceName: o.serviceName ?? 'envkeep',
    now: core.now,
    importTtlMs: settings.importTtlMs,
    historyDays: settings.historyDays,
    rateLimit: Object.freeze({
      perMinute: positive('rateLimit.perMinute', o.rateLimit?.perMinute, 60),
      perDay: positive('rateLimit.perDay', o.rateLimit?.perDay, 5000),
    }),
    plans: settings.plans,
    accessTokenTtlMs: positive('accessTokenTtlMs', o.accessTokenTtlMs, 60 * 60 * 1000),
    signInTtlMs: positive('signInTtlMs', o.signInTtlMs, 365 * DAY),
    signInIdleMs: positive('signInIdleMs', o.signInIdleMs, 90 * DAY),
    codeTtlMs: positive('codeTtlMs', o.codeTtlMs, 60 * 1000),
    ciAllowHttpLoopbackIssuers: settings.ciAllowHttpLoopbackIssuers,
    allowPrivateWebhooks: settings.allowPrivateWebhooks,
    webhookIntervalMs: positive('webhookIntervalMs', o.webhookIntervalMs, 2000),
    expiryIntervalMs: positive('expiryIntervalMs', o.expiryIntervalMs, 5000),
    observer: safeObserver(o.observer),
    resource: `${baseUrl}/api/env`,
    cliClientId: `${baseUrl}/cli/oauth-client.json`,
    resourceMetadataUrl: `${url.origin}/.well-known/oauth-protected-resource${basePath}/api/env`,
    secureCookies: url.protocol === 'https:',
    basePath,
    mcp: o.mcp
      ? Object.freeze({
          resource: `${baseUrl}/mcp`,
          path: `${basePath}/mcp`,
          resourceMetadataUrl: `${url.origin}/.well-known/oauth-protected-resource${basePath}/mcp`,
          allowHttpLoopbackClients: typeof o.mcp === 'object' && o.mcp.allowHttpLoopbackClients === true,
        })
      : null,
  })
}

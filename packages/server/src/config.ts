import { OIDC_SETTINGS, OidcConfigError, parseOidcConfig, type OidcConfig } from './oidc/oidc-config.js'
import { isIP } from 'node:net'
import { isAbsolute, resolve } from 'node:path'
import type { StorageLimit } from '@envkeep/env-api-plugin'
import { fileURLToPath } from 'node:url'
import type { AuditSink } from './ops/audit-stream.js'
import { resolveFileSettings } from './ops/settings.js'

/** A wrong command line or setting: the process prints it and exits 2, nothing started. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'UsageError'
  }
}

export interface ServerConfig {
  readonly host: string
  readonly port: number
  /** absolute path of the data directory */
  readonly dataDir: string
  /** public base URL, no trailing slash: the OAuth issuer and the start of every link */
  readonly baseUrl: string
  /** path part of baseUrl ('' at the root) */
  readonly basePath: string
  /** the master key given in ENVKEEP_MASTER_KEY, or null (then the key file is used) */
  readonly masterKeyFromEnv: Uint8Array | null
  /** the key file: ENVKEEP_MASTER_KEY_FILE or `<dataDir>/master.key` */
  readonly masterKeyFile: string
  /** true when ENVKEEP_MASTER_KEY_FILE named the file */
  readonly masterKeyFileExplicit: boolean
  readonly ratePerMinute: number
  readonly ratePerDay: number
  /** lifetime of a pending push, in seconds */
  readonly importTtlSeconds: number
  /** ENVKEEP_HISTORY_DAYS: retention of versions kept in history */
  readonly historyDays: number
  readonly plans: Readonly<Record<string, StorageLimit>>
  readonly logLevel: string
  /**
   * Which proxies' X-Forwarded-For to believe: false (none, the default), the number of proxy
   * hops in front of envkeep, or the proxies' addresses/CIDRs. Never "everything".
   */
  readonly trustProxy: false | number | readonly string[]
  /** ENVKEEP_CI_ALLOW_HTTP_ISSUERS=loopback: CI identities may name http://127.0.0.1:* issuers (tests only) */
  readonly ciAllowHttpLoopbackIssuers: boolean
  /** ENVKEEP_MCP=off turns the MCP endpoint at {base_url}/mcp off (default on) */
  readonly mcp: boolean
  /** ENVKEEP_MCP_ALLOW_HTTP_CLIENTS=loopback: MCP client metadata documents at http://127.0.0.1:* (tests only) */
  readonly mcpAllowHttpLoopbackClients: boolean
  /** ENVKEEP_WEBHOOK_ALLOW_PRIVATE=true: webhooks may call private, loopback and link-local addresses */
  readonly webhookAllowPrivate: boolean
  /** ENVKEEP_REQUIRE_SECOND_FACTOR=true: every password account adds a second factor at its next sign-in */
  readonly requireSecondFactor: boolean
  /** single sign-on by OpenID Connect (ENVKEEP_OIDC_*), or null */
  readonly oidc: OidcConfig | null
  /** ENVKEEP_PASSWORD_LOGIN=false: sign-in by single sign-on only */
  readonly passwordLogin: boolean
  /** --allow-insecure-key-file: use a master key file that group or others can read */
  readonly allowInsecureKeyFile: boolean
  /** the SQLite file inside the data directory (used when no databaseUrl is given) */
  readonly databaseFile: string
  /** --database-url / ENVKEEP_DATABASE_URL: PostgreSQL instead of the embedded SQLite file */
  readonly databaseUrl: string | null
  /** ENVKEEP_DATABASE_POOL: PostgreSQL connections per process */
  readonly databasePool: number
  /**
   * ENVKEEP_SMTP_URL and ENVKEEP_SMTP_FROM: invitations are also sent by email; null without
   * them. The URL may hold a password: it is never logged or repeated in an error.
   */
  readonly smtp: SmtpConfig | null
  /** ENVKEEP_SHUTDOWN_GRACE: seconds in-flight requests get to finish after SIGTERM */
  readonly shutdownGraceSeconds: number
  /** ENVKEEP_METRICS_ADDRESS: host:port of the Prometheus listener, or null (off) */
  readonly metricsAddress: { readonly host: string; readonly port: number } | null
  /** ENVKEEP_AUDIT_STREAM (+ ENVKEEP_AUDIT_STREAM_SECRET): where the audit stream goes, or null (off) */
  readonly auditStream: AuditSink | null
}

export interface SmtpConfig {
  /** smtp://user:pass@host:587 (STARTTLS when offered) or smtps://…:465 */
  readonly url: string
  /** the From of the messages, e.g. `envkeep <envkeep@example.com>` */
  readonly from: string
}

export interface Setting {
  readonly env: string
  readonly flag?: string
  readonly default: string
  readonly meaning: string
}

export const DEFAULT_PLANS: Readonly<Record<string, StorageLimit>> = Object.freeze({
  'self-hosted': Object.freeze({ maxVariables: 10_000, maxBytes: 20 * 1024 * 1024 }),
})

/**
 * Every setting, for --help and the README (keep the README table in step). This is also the
 * list of known names: an ENVKEEP_ variable not here is warned about at start (ops/settings.ts);
 * a secret one also goes in SECRET_SETTINGS there, which gives it its _FILE form.
 */
export const SETTINGS: readonly Setting[] = Object.freeze([
  { flag: '--host', env: 'ENVKEEP_HOST', default: '127.0.0.1', meaning: 'address to listen on' },
  { flag: '--port', env: 'ENVKEEP_PORT', default: '8080', meaning: 'port to listen on (1-65535)' },
  { flag: '--data-dir', env: 'ENVKEEP_DATA_DIR', default: './.envkeep', meaning: 'data directory: SQLite database, master.key' },
  {
    flag: '--base-url',
    env: 'ENVKEEP_BASE_URL',
    default: 'http://<host>:<port>',
    meaning: 'public URL of the service (OAuth issuer, links); https makes cookies Secure',
  },
  {
    flag: '--database-url',
    env: 'ENVKEEP_DATABASE_URL',
    default: '(none: SQLite in the data directory)',
    meaning: 'postgres://user:pass@host:5432/db (TLS as its sslmode says): PostgreSQL, shared by any number of server processes',
  },
  { env: 'ENVKEEP_DATABASE_POOL', default: '10', meaning: 'PostgreSQL connections per process (1-100)' },
  { env: 'ENVKEEP_MASTER_KEY', default: '(none)', meaning: 'master key, 32 bytes in base64url; wins over any key file' },
  { env: 'ENVKEEP_MASTER_KEY_FILE', default: '<data-dir>/master.key', meaning: 'file holding the master key (base64url)' },
  { env: 'ENVKEEP_RATE_PER_MINUTE', default: '60', meaning: 'API requests per sign-in per minute' },
  { env: 'ENVKEEP_RATE_PER_DAY', default: '5000', meaning: 'API requests per sign-in per day' },
  { env: 'ENVKEEP_IMPORT_TTL', default: '604800', meaning: 'seconds a pending push lives before it expires (7 days)' },
  { env: 'ENVKEEP_HISTORY_DAYS', default: '365', meaning: "days versions are kept in history (each variable's last 10 are kept whatever their age)" },
  {
    env: 'ENVKEEP_PLANS',
    default: '{"self-hosted":{"maxVariables":10000,"maxBytes":20971520}}',
    meaning: 'storage limits per plan, JSON; merged over the default table',
  },
  { env: 'ENVKEEP_LOG_LEVEL', default: 'info', meaning: 'fatal, error, warn, info, debug, trace or silent' },
  {
    env: 'ENVKEEP_CI_ALLOW_HTTP_ISSUERS',
    default: '(none)',
    meaning: 'loopback: CI identities may name http://127.0.0.1:* OIDC issuers (tests only; https otherwise)',
  },
  { env: 'ENVKEEP_MCP', default: 'on', meaning: 'off turns the MCP endpoint at {base_url}/mcp off (names only, never values; see docs/mcp.md)' },
  {
    env: 'ENVKEEP_MCP_ALLOW_HTTP_CLIENTS',
    default: '(none)',
    meaning: 'loopback: MCP client metadata documents may be at http://127.0.0.1:* (tests only; https otherwise)',
  },
  {
    env: 'ENVKEEP_SMTP_URL',
    default: '(none: invitations are links to copy)',
    meaning: 'smtp://user:pass@host:587 or smtps://user:pass@host:465: invitations are also sent by email (never logged)',
  },
  { env: 'ENVKEEP_SMTP_FROM', default: '(none; needed with ENVKEEP_SMTP_URL)', meaning: 'sender of the emails, e.g. envkeep <envkeep@example.com>' },
  {
    env: 'ENVKEEP_WEBHOOK_ALLOW_PRIVATE',
    default: 'false',
    meaning: 'true lets webhooks call private, loopback and link-local addresses (refused by default, when added and at each delivery)',
  },
  { env: 'ENVKEEP_SHUTDOWN_GRACE', default: '10', meaning: 'seconds requests in flight get to finish after SIGTERM before the server stops anyway (1-600)' },
  {
    env: 'ENVKEEP_METRICS_ADDRESS',
    default: '(none: no metrics)',
    meaning: 'host:port of a separate listener serving Prometheus text at /metrics, e.g. 127.0.0.1:9464 (never on the public port)',
  },
  {
    env: 'ENVKEEP_AUDIT_STREAM',
    default: '(none)',
    meaning:
      'every access-log entry and server audit event as JSON Lines: an absolute file path (reopened on SIGHUP) or an https:// endpoint (batched, signed)',
  },
  {
    env: 'ENVKEEP_AUDIT_STREAM_SECRET',
    default: '(none; needed with an https stream)',
    meaning: 'HMAC key signing each batch sent to an https audit stream (16+ characters)',
  },
  {
    env: 'ENVKEEP_REQUIRE_SECOND_FACTOR',
    default: 'false',
    meaning: 'true: every password account adds a second factor (an authenticator app or a passkey) at its next sign-in',
  },
  ...OIDC_SETTINGS,
  {
    env: 'ENVKEEP_TRUST_PROXY',
    default: 'false',
    meaning: "behind a reverse proxy: the number of proxy hops (e.g. 1), or the proxies' addresses/CIDRs (e.g. 127.0.0.1,10.0.0.0/8); never true",
  },
])

export type Flags = Readonly<Record<string, string | boolean | undefined>>
export type Env = Readonly<Record<string, string | undefined>>

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']

/** An env value, with '' meaning unset. */
function envValue(env: Env, name: string): string | undefined {
  const v = env[name]
  return v === undefined || v === '' ? undefined : v
}

function pick(flags: Flags, flag: string, env: Env, name: string): string | undefined {
  const f = flags[flag]
  if (typeof f === 'string') return f
  return envValue(env, name)
}

function integer(label: string, raw: string | undefined, dflt: number, min: number, max: number): number {
  if (raw === undefined) return dflt
  if (!/^\d+$/.test(raw.trim())) throw new UsageError(`${label} must be a whole number from ${min} to ${max}`)
  const n = Number(raw.trim())
  if (!Number.isSafeInteger(n) || n < min || n > max) throw new UsageError(`${label} must be a whole number from ${min} to ${max}`)
  return n
}

/**
 * Decodes a master key given as base64url (32 bytes). The error never
 * repeats what was given.
 */
export function decodeMasterKey(text: string, label: string): Uint8Array {
  const t = text.trim()
  if (!/^[A-Za-z0-9_-]{43}=?$/.test(t)) throw new UsageError(`${label} must be 32 bytes in base64url (43 characters)`)
  const key = Buffer.from(t.replace(/=$/, ''), 'base64url')
  if (key.length !== 32) throw new UsageError(`${label} must be 32 bytes in base64url (43 characters)`)
  return new Uint8Array(key)
}

function parsePlans(raw: string | undefined): Record<string, StorageLimit> {
  const plans: Record<string, StorageLimit> = { ...DEFAULT_PLANS }
  if (raw === undefined) return plans
  let parsed: unknown
  try {
    parsed = JSON.parse(raw)
  } catch {
    throw new UsageError('ENVKEEP_PLANS must be JSON: {"<plan>": {"maxVariables": <n>, "maxBytes": <n>}, …}')
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new UsageError('ENVKEEP_PLANS must be a JSON object of plans')
  for (const [name, limit] of Object.entries(parsed as Record<string, unknown>)) {
    if (!/^[a-z0-9][a-z0-9-]{0,62}$/.test(name)) throw new UsageError('ENVKEEP_PLANS: plan names are lower-case letters, digits and dashes')
    const l = limit as Partial<Record<string, unknown>> | null
    const ok = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v > 0
    if (!l || typeof l !== 'object' || !ok(l.maxVariables) || !ok(l.maxBytes) || Object.keys(l).length !== 2)
      throw new UsageError(`ENVKEEP_PLANS: plan ${name} needs exactly maxVariables and maxBytes, positive whole numbers`)
    plans[name] = Object.freeze({ maxVariables: l.maxVariables, maxBytes: l.maxBytes })
  }
  return plans
}

/** A PostgreSQL connection string, checked (the password never appears in the error). */
function parseDatabaseUrl(raw: string | undefined): string | null {
  if (raw === undefined) return null
  let u: URL
  try {
    u = new URL(raw)
  } catch {
    throw new UsageError('ENVKEEP_DATABASE_URL (--database-url) must be a URL like postgres://user:password@host:5432/envkeep')
  }
  if (u.protocol !== 'postgres:' && u.protocol !== 'postgresql:') {
    throw new UsageError('ENVKEEP_DATABASE_URL (--database-url) must start with postgres:// (PostgreSQL is the only database besides the embedded SQLite)')
  }
  return raw
}

/**
 * ENVKEEP_SMTP_URL and ENVKEEP_SMTP_FROM, checked; errors never repeat the URL (it may hold a
 * password).
 */
function parseSmtp(rawUrl: string | undefined, rawFrom: string | undefined): SmtpConfig | null {
  if (rawUrl === undefined) {
    if (rawFrom !== undefined) throw new UsageError('ENVKEEP_SMTP_FROM is set but ENVKEEP_SMTP_URL is not: set both to send invitations by email')
    return null
  }
  let u: URL
  try {
    u = new URL(rawUrl)
  } catch {
    throw new UsageError('ENVKEEP_SMTP_URL must be a URL like smtp://user:password@mail.example.com:587 (password percent-encoded)')
  }
  if ((u.protocol !== 'smtp:' && u.protocol !== 'smtps:') || u.hostname === '')
    throw new UsageError('ENVKEEP_SMTP_URL must start with smtp:// (STARTTLS) or smtps:// (TLS) and name a host')
  // nodemailer reads options from the query; these two would log the SMTP dialogue, password included
  if (u.searchParams.has('logger') || u.searchParams.has('debug'))
    throw new UsageError('ENVKEEP_SMTP_URL: the logger and debug options are refused (they would log the password)')
  if (rawFrom === undefined) throw new UsageError('ENVKEEP_SMTP_URL is set: ENVKEEP_SMTP_FROM must name the sender, e.g. envkeep <envkeep@example.com>')
  const from = rawFrom.trim()
  if (from.length > 320 || /[\r\n]/.test(from) || !/^(?:[^<>@]*<[^\s<>@]+@[^\s<>@]+>|[^\s<>@]+@[^\s<>@]+)$/.test(from))
    throw new UsageError('ENVKEEP_SMTP_FROM must be an email address, or a name and <address>, e.g. envkeep <envkeep@example.com>')
  return Object.freeze({ url: rawUrl, from })
}

const PROXY_NAMES = ['loopback', 'linklocal', 'uniquelocal']

/**
 * ENVKEEP_TRUST_PROXY: hops or addresses, never "trust everything": with `true`, a client
 * behind a proxy that appends to X-Forwarded-For picks its own address (and so escapes
 * login throttling and per-address limits, and forges the access log's addresses).
 */
export function parseTrustProxy(raw: string | undefined): false | number | readonly string[] {
  if (raw === undefined) return false
  const v = raw.trim().toLowerCase()
  if (v === 'false' || v === '0' || v === 'no' || v === 'none') return false
  if (v === 'true' || v === 'yes' || v === '*') {
    throw new UsageError(
      "ENVKEEP_TRUST_PROXY=true would believe any X-Forwarded-For a client sends; give the number of proxy hops in front of envkeep (e.g. 1) or the proxies' addresses/CIDRs (e.g. 127.0.0.1,10.0.0.0/8)",
    )
  }
  if (/^\d+$/.test(v)) {
    const n = Number(v)
    if (n < 1 || n > 10) throw new UsageError('ENVKEEP_TRUST_PROXY: the number of proxy hops must be 1 to 10')
    return n
  }
  const items = v
    .split(',')
    .map((x) => x.trim())
    .filter((x) => x !== '')
  for (const item of items) {
    if (PROXY_NAMES.includes(item)) continue
    const [address, prefix, extra] = item.split('/')
    const family = isIP(address ?? '')
    const bits = family === 4 ? 32 : 128
    const prefixOk = prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= bits)
    if (family === 0 || !prefixOk || extra !== undefined) {
      throw new UsageError(`ENVKEEP_TRUST_PROXY: ${JSON.stringify(item.slice(0, 60))} is not a number of hops, an IP address or a CIDR`)
    }
  }
  if (items.length === 0) throw new UsageError('ENVKEEP_TRUST_PROXY: give a number of hops or addresses/CIDRs')
  return Object.freeze(items)
}

/** ENVKEEP_AUDIT_STREAM and its secret; errors never repeat the secret or a URL's credentials. */
function parseAuditStream(raw: string | undefined, secret: string | undefined): AuditSink | null {
  if (raw === undefined) {
    if (secret !== undefined) throw new UsageError('ENVKEEP_AUDIT_STREAM_SECRET is set but ENVKEEP_AUDIT_STREAM is not')
    return null
  }
  if (raw.startsWith('/') || raw.startsWith('file:')) {
    let path: string
    try {
      path = raw.startsWith('file:') ? fileURLToPath(raw) : raw
    } catch {
      throw new UsageError('ENVKEEP_AUDIT_STREAM: a file:// URL must name an absolute path')
    }
    return Object.freeze({ kind: 'file', path: resolve(path) })
  }
  let u: URL
  try {
    u = new URL(raw)
  } catch {
    throw new UsageError('ENVKEEP_AUDIT_STREAM must be an absolute file path or an https:// URL')
  }
  if (u.protocol !== 'https:')
    throw new UsageError('ENVKEEP_AUDIT_STREAM must be an absolute file path or an https:// URL (http is refused: the entries would travel in clear)')
  if (u.username || u.password) throw new UsageError('ENVKEEP_AUDIT_STREAM: put no credentials in the URL; batches are signed with ENVKEEP_AUDIT_STREAM_SECRET')
  if (secret === undefined || secret.length < 16)
    throw new UsageError('ENVKEEP_AUDIT_STREAM is an https endpoint: ENVKEEP_AUDIT_STREAM_SECRET (16+ characters) must sign what is sent')
  return Object.freeze({ kind: 'https', url: u.toString(), secret })
}

/** `host:port` or `[v6]:port` of a listener of its own. */
function parseListenAddress(label: string, raw: string | undefined): { host: string; port: number } | null {
  if (raw === undefined) return null
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9.-]+)):(\d{1,5})$/.exec(raw.trim())
  const port = m ? Number(m[3]) : 0
  if (!m || port < 1 || port > 65535) throw new UsageError(`${label} must be host:port, e.g. 127.0.0.1:9464`)
  return Object.freeze({ host: (m[1] ?? m[2]) as string, port })
}

function defaultBaseUrl(host: string, port: number): string {
  // a wildcard address is not a place a browser can go: use loopback
  const h = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host
  return `http://${h.includes(':') ? `[${h}]` : h}:${port}`
}

function parseBaseUrl(raw: string): { baseUrl: string; basePath: string } {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new UsageError('ENVKEEP_BASE_URL (--base-url) must be an absolute http(s) URL')
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError('ENVKEEP_BASE_URL (--base-url) must be an absolute http(s) URL')
  if (url.search || url.hash || url.username || url.password) throw new UsageError('ENVKEEP_BASE_URL (--base-url) must have no query, fragment or credentials')
  const baseUrl = raw.replace(/\/+$/, '')
  const basePath = url.pathname.replace(/\/+$/, '')
  return { baseUrl, basePath }
}

/**
 * The configuration from flags (win) and environment variables, with the
 * spec's values as defaults. Throws UsageError on any bad value; never
 * repeats a key.
 */
export function loadConfig(flags: Flags, rawEnv: Env, cwd: string): ServerConfig {
  // every secret setting may come from a file: ENVKEEP_DATABASE_URL_FILE=/run/secrets/db …
  const env: Env = resolveFileSettings(rawEnv, cwd, (message) => new UsageError(message))
  const host = pick(flags, 'host', env, 'ENVKEEP_HOST') ?? '127.0.0.1'
  if (!/^[A-Za-z0-9.:_-]+$/.test(host)) throw new UsageError('ENVKEEP_HOST (--host) must be a host name or an IP address')
  const port = integer('ENVKEEP_PORT (--port)', pick(flags, 'port', env, 'ENVKEEP_PORT'), 8080, 1, 65535)
  const rawDir = pick(flags, 'data-dir', env, 'ENVKEEP_DATA_DIR') ?? './.envkeep'
  const dataDir = isAbsolute(rawDir) ? resolve(rawDir) : resolve(cwd, rawDir)
  const { baseUrl, basePath } = parseBaseUrl(pick(flags, 'base-url', env, 'ENVKEEP_BASE_URL') ?? defaultBaseUrl(host, port))

  const keyText = envValue(env, 'ENVKEEP_MASTER_KEY')
  const keyFileRaw = envValue(env, 'ENVKEEP_MASTER_KEY_FILE')
  if (keyText !== undefined && keyFileRaw !== undefined) throw new UsageError('set ENVKEEP_MASTER_KEY or ENVKEEP_MASTER_KEY_FILE, not both')
  const masterKeyFromEnv = keyText === undefined ? null : decodeMasterKey(keyText, 'ENVKEEP_MASTER_KEY')
  const masterKeyFile = keyFileRaw === undefined ? resolve(dataDir, 'master.key') : resolve(cwd, keyFileRaw)

  const logLevel = envValue(env, 'ENVKEEP_LOG_LEVEL') ?? 'info'
  if (!LOG_LEVELS.includes(logLevel)) throw new UsageError(`ENVKEEP_LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`)

  const ciHttp = envValue(env, 'ENVKEEP_CI_ALLOW_HTTP_ISSUERS')
  if (ciHttp !== undefined && ciHttp !== 'loopback') throw new UsageError('ENVKEEP_CI_ALLOW_HTTP_ISSUERS can only be loopback (for tests), or unset')

  const mcp = envValue(env, 'ENVKEEP_MCP') ?? 'on'
  if (mcp !== 'on' && mcp !== 'off') throw new UsageError('ENVKEEP_MCP must be on or off')
  const mcpHttp = envValue(env, 'ENVKEEP_MCP_ALLOW_HTTP_CLIENTS')
  if (mcpHttp !== undefined && mcpHttp !== 'loopback') throw new UsageError('ENVKEEP_MCP_ALLOW_HTTP_CLIENTS can only be loopback (for tests), or unset')

  const webhookPrivate = envValue(env, 'ENVKEEP_WEBHOOK_ALLOW_PRIVATE')
  if (webhookPrivate !== undefined && webhookPrivate !== 'true' && webhookPrivate !== 'false')
    throw new UsageError('ENVKEEP_WEBHOOK_ALLOW_PRIVATE must be true or false')

  const requireFactor = envValue(env, 'ENVKEEP_REQUIRE_SECOND_FACTOR')
  if (requireFactor !== undefined && requireFactor !== 'true' && requireFactor !== 'false')
    throw new UsageError('ENVKEEP_REQUIRE_SECOND_FACTOR must be true or false')

  let sso: ReturnType<typeof parseOidcConfig>
  try {
    sso = parseOidcConfig(env, cwd)
  } catch (err) {
    if (err instanceof OidcConfigError) throw new UsageError(err.message)
    throw err
  }

  return Object.freeze({
    host,
    port,
    dataDir,
    baseUrl,
    basePath,
    masterKeyFromEnv,
    masterKeyFile,
    masterKeyFileExplicit: keyFileRaw !== undefined,
    ratePerMinute: integer('ENVKEEP_RATE_PER_MINUTE', envValue(env, 'ENVKEEP_RATE_PER_MINUTE'), 60, 1, 1_000_000),
    ratePerDay: integer('ENVKEEP_RATE_PER_DAY', envValue(env, 'ENVKEEP_RATE_PER_DAY'), 5000, 1, 1_000_000_000),
    importTtlSeconds: integer('ENVKEEP_IMPORT_TTL', envValue(env, 'ENVKEEP_IMPORT_TTL'), 604_800, 60, 365 * 86_400),
    historyDays: integer('ENVKEEP_HISTORY_DAYS', envValue(env, 'ENVKEEP_HISTORY_DAYS'), 365, 1, 36_500),
    plans: Object.freeze(parsePlans(envValue(env, 'ENVKEEP_PLANS'))),
    logLevel,
    trustProxy: parseTrustProxy(envValue(env, 'ENVKEEP_TRUST_PROXY')),
    ciAllowHttpLoopbackIssuers: ciHttp === 'loopback',
    mcp: mcp === 'on',
    mcpAllowHttpLoopbackClients: mcpHttp === 'loopback',
    webhookAllowPrivate: webhookPrivate === 'true',
    requireSecondFactor: requireFactor === 'true',
    oidc: sso.oidc,
    passwordLogin: sso.passwordLogin,
    allowInsecureKeyFile: flags['allow-insecure-key-file'] === true,
    databaseFile: resolve(dataDir, 'envkeep.db'),
    databaseUrl: parseDatabaseUrl(pick(flags, 'database-url', env, 'ENVKEEP_DATABASE_URL')),
    databasePool: integer('ENVKEEP_DATABASE_POOL', envValue(env, 'ENVKEEP_DATABASE_POOL'), 10, 1, 100),
    smtp: parseSmtp(envValue(env, 'ENVKEEP_SMTP_URL'), envValue(env, 'ENVKEEP_SMTP_FROM')),
    shutdownGraceSeconds: integer('ENVKEEP_SHUTDOWN_GRACE', envValue(env, 'ENVKEEP_SHUTDOWN_GRACE'), 10, 1, 600),
    metricsAddress: parseListenAddress('ENVKEEP_METRICS_ADDRESS', envValue(env, 'ENVKEEP_METRICS_ADDRESS')),
    auditStream: parseAuditStream(envValue(env, 'ENVKEEP_AUDIT_STREAM'), envValue(env, 'ENVKEEP_AUDIT_STREAM_SECRET')),
  })
}

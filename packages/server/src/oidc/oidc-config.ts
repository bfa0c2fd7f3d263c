import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'

/** A group rule: members of `group` (in the ID token's groups claim) get `role` in `vault` (a name or an id). */
export interface GroupRule {
  readonly group: string
  readonly vault: string
  readonly role: 'owner' | 'editor' | 'viewer'
}

/** Single sign-on by OpenID Connect (issue 22), from ENVKEEP_OIDC_*; null when ENVKEEP_OIDC_ISSUER is unset. */
export interface OidcConfig {
  readonly issuer: string
  readonly clientId: string
  /** never logged; from ENVKEEP_OIDC_CLIENT_SECRET or the file ENVKEEP_OIDC_CLIENT_SECRET_FILE */
  readonly clientSecret: string
  /** the button's label */
  readonly name: string
  readonly scopes: readonly string[]
  readonly allowHttpLoopback: boolean
  /** lowercase email domains whose verified emails may adopt an account or create one */
  readonly allowedDomains: readonly string[]
  readonly autoCreate: boolean
  readonly groupRules: readonly GroupRule[]
  readonly groupsClaim: string
}

export const OIDC_SETTINGS = [
  {
    env: 'ENVKEEP_OIDC_ISSUER',
    default: '(none: no single sign-on)',
    meaning: "the OpenID Connect provider's issuer URL (https; discovery at /.well-known/openid-configuration)",
  },
  { env: 'ENVKEEP_OIDC_CLIENT_ID', default: '(none; needed with the issuer)', meaning: 'the client id registered at the provider' },
  { env: 'ENVKEEP_OIDC_CLIENT_SECRET', default: '(none)', meaning: 'the client secret (or ENVKEEP_OIDC_CLIENT_SECRET_FILE: a file holding it); never logged' },
  { env: 'ENVKEEP_OIDC_NAME', default: 'single sign-on', meaning: 'the sign-in button says "Sign in with <name>"' },
  { env: 'ENVKEEP_OIDC_SCOPES', default: 'openid email profile', meaning: 'scopes asked for, space-separated (openid always)' },
  { env: 'ENVKEEP_OIDC_ALLOW_HTTP_ISSUER', default: '(none)', meaning: 'loopback: the issuer may be http://127.0.0.1:* or http://localhost:* (tests only)' },
  {
    env: 'ENVKEEP_OIDC_ALLOWED_DOMAINS',
    default: '(none)',
    meaning: 'comma-separated email domains: a verified email of these adopts the account that has it, or creates one',
  },
  {
    env: 'ENVKEEP_OIDC_AUTO_CREATE',
    default: 'false',
    meaning: 'true: first sign-in creates the account (allowed domains only); it reaches nothing until invited or mapped',
  },
  { env: 'ENVKEEP_OIDC_GROUP_RULES', default: '(none)', meaning: 'a JSON file of rules [{"group","vault","role"}] applied at every single sign-on' },
  { env: 'ENVKEEP_OIDC_GROUPS_CLAIM', default: 'groups', meaning: 'the ID token claim holding the groups' },
  {
    env: 'ENVKEEP_PASSWORD_LOGIN',
    default: 'true',
    meaning: 'false: sign-in by single sign-on only (break-glass: admin login-link); refused while nobody can sign in by SSO',
  },
] as const

export class OidcConfigError extends Error {}

function isLoopbackHttp(u: URL): boolean {
  return u.protocol === 'http:' && (u.hostname === '127.0.0.1' || u.hostname === 'localhost' || u.hostname === '[::1]')
}

function parseRules(file: string): GroupRule[] {
  let raw: unknown
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'))
  } catch (err) {
    throw new OidcConfigError(`ENVKEEP_OIDC_GROUP_RULES: cannot read ${file} as JSON (${(err as Error).message.split('\n')[0]})`)
  }
  if (!Array.isArray(raw)) throw new OidcConfigError('ENVKEEP_OIDC_GROUP_RULES: the file must hold a JSON array of rules')
  return raw.map((r, i) => {
    const o = r as Record<string, unknown> | null
    const ok =
      o !== null &&
      typeof o === 'object' &&
      typeof o.group === 'string' &&
      o.group !== '' &&
      typeof o.vault === 'string' &&
      o.vault !== '' &&
      (o.role === 'owner' || o.role === 'editor' || o.role === 'viewer')
    if (!ok) throw new OidcConfigError(`ENVKEEP_OIDC_GROUP_RULES: rule ${i + 1} must be {"group": "…", "vault": "<name or id>", "role": "owner|editor|viewer"}`)
    return { group: o.group as string, vault: o.vault as string, role: o.role as GroupRule['role'] }
  })
}

/** Reads the OIDC settings; throws OidcConfigError (never quoting the secret). */
export function parseOidcConfig(env: Readonly<Record<string, string | undefined>>, cwd: string): { oidc: OidcConfig | null; passwordLogin: boolean } {
  const v = (name: string) => {
    const x = env[name]
    return x === undefined || x === '' ? undefined : x
  }
  const passwordRaw = v('ENVKEEP_PASSWORD_LOGIN')
  if (passwordRaw !== undefined && passwordRaw !== 'true' && passwordRaw !== 'false') throw new OidcConfigError('ENVKEEP_PASSWORD_LOGIN must be true or false')
  const passwordLogin = passwordRaw !== 'false'
  const issuer = v('ENVKEEP_OIDC_ISSUER')
  if (issuer === undefined) {
    if (!passwordLogin) throw new OidcConfigError('ENVKEEP_PASSWORD_LOGIN=false needs single sign-on: set ENVKEEP_OIDC_ISSUER and ENVKEEP_OIDC_CLIENT_ID')
    return { oidc: null, passwordLogin }
  }
  let url: URL
  try {
    url = new URL(issuer)
  } catch {
    throw new OidcConfigError('ENVKEEP_OIDC_ISSUER must be an absolute https URL')
  }
  const http = v('ENVKEEP_OIDC_ALLOW_HTTP_ISSUER')
  if (http !== undefined && http !== 'loopback') throw new OidcConfigError('ENVKEEP_OIDC_ALLOW_HTTP_ISSUER can only be loopback (for tests), or unset')
  if (url.protocol !== 'https:' && !(http === 'loopback' && isLoopbackHttp(url)))
    throw new OidcConfigError('ENVKEEP_OIDC_ISSUER must be https (http only on 127.0.0.1 or localhost, with ENVKEEP_OIDC_ALLOW_HTTP_ISSUER=loopback)')
  const clientId = v('ENVKEEP_OIDC_CLIENT_ID')
  if (clientId === undefined) throw new OidcConfigError('ENVKEEP_OIDC_CLIENT_ID is needed with ENVKEEP_OIDC_ISSUER')
  // ENVKEEP_OIDC_CLIENT_SECRET_FILE is resolved into ENVKEEP_OIDC_CLIENT_SECRET by ops/settings.ts
  const clientSecret = v('ENVKEEP_OIDC_CLIENT_SECRET') ?? ''
  const scopes = (v('ENVKEEP_OIDC_SCOPES') ?? 'openid email profile').split(/\s+/).filter((s) => s !== '')
  if (!scopes.includes('openid')) scopes.unshift('openid')
  const autoRaw = v('ENVKEEP_OIDC_AUTO_CREATE')
  if (autoRaw !== undefined && autoRaw !== 'true' && autoRaw !== 'false') throw new OidcConfigError('ENVKEEP_OIDC_AUTO_CREATE must be true or false')
  const allowedDomains = (v('ENVKEEP_OIDC_ALLOWED_DOMAINS') ?? '')
    .split(',')
    .map((d) => d.trim().toLowerCase().replace(/^@/, ''))
    .filter((d) => d !== '')
  for (const d of allowedDomains)
    if (!/^[a-z0-9.-]+\.[a-z]{2,}$|^localhost$/.test(d)) throw new OidcConfigError(`ENVKEEP_OIDC_ALLOWED_DOMAINS: "${d}" is not a domain`)
  const rulesFile = v('ENVKEEP_OIDC_GROUP_RULES')
  return {
    passwordLogin,
    oidc: Object.freeze({
      issuer: url.href.replace(/\/$/, '') === issuer.replace(/\/$/, '') ? issuer : url.href,
      clientId,
      clientSecret,
      name: v('ENVKEEP_OIDC_NAME') ?? 'single sign-on',
      scopes,
      allowHttpLoopback: http === 'loopback',
      allowedDomains,
      autoCreate: autoRaw === 'true',
      groupRules: rulesFile === undefined ? [] : parseRules(resolve(cwd, rulesFile)),
      groupsClaim: v('ENVKEEP_OIDC_GROUPS_CLAIM') ?? 'groups',
    }),
  }
}

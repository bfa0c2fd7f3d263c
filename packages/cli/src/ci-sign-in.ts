import * as oauth from 'oauth4webapi'
import { CliError } from './errors.js'
import { EXIT } from './exit-codes.js'
import { clientFor, discover, isLoopbackHost, oauthFailure, type OAuthDeps } from './oauth.js'

const GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange'
const JWT_TYPE = 'urn:ietf:params:oauth:token-type:jwt'
/** An identity token is a JWT of a few KB; refuse anything that is plainly not one. */
const MAX_ID_TOKEN_BYTES = 16 * 1024

export type CiEnv = Readonly<Record<string, string | undefined>>

/** What a CI run without an identity token needs, said where a CI run fails for want of one. */
export const CI_TOKEN_HINT =
  "in CI, set ENVKEEP_OIDC_TOKEN to this run's identity token, or in GitHub Actions give the job `permissions: id-token: write` (GitHub then sets ACTIONS_ID_TOKEN_REQUEST_URL and ACTIONS_ID_TOKEN_REQUEST_TOKEN)"

/** Whether this looks like a CI run (CI=true, as GitHub Actions, GitLab CI and most others set). */
export function inCi(env: CiEnv): boolean {
  return env.CI === 'true' || env.CI === '1' || env.GITHUB_ACTIONS === 'true'
}

/** Where this CI run's identity token comes from, or null when nothing says this is a CI run with one. */
export type CiTokenSource =
  | { readonly kind: 'env' }
  | { readonly kind: 'github'; readonly url: string; readonly requestToken: string; readonly audience: string }

/**
 * `ENVKEEP_OIDC_TOKEN`, else GitHub Actions' `ACTIONS_ID_TOKEN_REQUEST_URL`
 * and `ACTIONS_ID_TOKEN_REQUEST_TOKEN` (the job needs `permissions: id-token:
 * write`), asked for with audience `ENVKEEP_OIDC_AUDIENCE` (default the base URL).
 * Throws, naming the missing variable, when only one of GitHub's two is set.
 */
export function ciTokenSource(env: CiEnv, baseUrl: string): CiTokenSource | null {
  if (env.ENVKEEP_OIDC_TOKEN) return { kind: 'env' }
  const url = env.ACTIONS_ID_TOKEN_REQUEST_URL || undefined
  const requestToken = env.ACTIONS_ID_TOKEN_REQUEST_TOKEN || undefined
  if (url === undefined && requestToken === undefined) return null
  if (url === undefined || requestToken === undefined) {
    const missing = url === undefined ? 'ACTIONS_ID_TOKEN_REQUEST_URL' : 'ACTIONS_ID_TOKEN_REQUEST_TOKEN'
    throw new CliError(`GitHub Actions gave no identity token: ${missing} is not set`, {
      exitCode: EXIT.needsSignIn,
      hint: 'give the job `permissions: id-token: write` (or set ENVKEEP_OIDC_TOKEN)',
    })
  }
  return { kind: 'github', url, requestToken, audience: env.ENVKEEP_OIDC_AUDIENCE || baseUrl }
}

/**
 * Why this CI run's identity token must not go to `baseUrl`, or null. It goes only to a server
 * the run named (ENVKEEP_BASE_URL, --base-url), never to one a folder's `.envkeep.json` names
 * (a file anyone with a branch can edit), and only over https: plain http only to this
 * machine, whatever ENVKEEP_ALLOW_HTTP says.
 */
export function ciRefusal(baseUrl: string, named: boolean): CliError | null {
  if (!named) {
    return new CliError(`this CI run's identity token goes only to a server named by ENVKEEP_BASE_URL or --base-url, not to ${baseUrl}`, {
      exitCode: EXIT.needsSignIn,
      hint: "the folder's .envkeep.json names that server; set ENVKEEP_BASE_URL in the job to your envkeep server",
    })
  }
  const url = new URL(baseUrl)
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopbackHost(url.hostname))) {
    return new CliError(`this CI run's identity token goes only over https, not to ${baseUrl}`, {
      exitCode: EXIT.needsSignIn,
      hint: 'give the server as https://… (ENVKEEP_ALLOW_HTTP does not apply to CI tokens)',
    })
  }
  return null
}

/** The identity token itself: from the environment, or asked of GitHub Actions. Never written anywhere. */
async function identityToken(source: CiTokenSource, env: CiEnv, deps: OAuthDeps): Promise<string> {
  if (source.kind === 'env') return (env.ENVKEEP_OIDC_TOKEN as string).trim()
  const url = new URL(source.url)
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && url.hostname === '127.0.0.1')) {
    throw new CliError('ACTIONS_ID_TOKEN_REQUEST_URL is not an https URL; refusing to send the request token there')
  }
  url.searchParams.set('audience', source.audience)
  let res: Response
  try {
    res = await deps.fetch(url, {
      headers: { authorization: `bearer ${source.requestToken}`, accept: 'application/json' },
      redirect: 'error',
      signal: AbortSignal.timeout(deps.timeoutMs),
    })
  } catch (err) {
    throw new CliError('could not ask GitHub Actions for an identity token', {
      network: { host: url.host, failure: String((err as Error).message ?? err) },
      cause: err,
    })
  }
  const text = await res.text()
  if (!res.ok)
    throw new CliError(`GitHub Actions refused an identity token (HTTP ${res.status})`, { hint: 'does the job have `permissions: id-token: write`?' })
  if (text.length > MAX_ID_TOKEN_BYTES) throw new CliError('GitHub Actions answered with something too large to be an identity token')
  let value: unknown
  try {
    value = (JSON.parse(text) as { value?: unknown }).value
  } catch {
    value = undefined
  }
  if (typeof value !== 'string' || value.split('.').length !== 3) throw new CliError('GitHub Actions answered without an identity token')
  return value
}

export interface CiAccess {
  readonly accessToken: string
  /** epoch ms */
  readonly expiresAt: number
  /** The CI identity the server says this run signed in as (display only), when it says. */
  readonly identity: { readonly name: string; readonly vaultId: string } | null
}

function identityOf(r: Record<string, unknown>): CiAccess['identity'] {
  const i = r.envkeep_ci_identity as Record<string, unknown> | undefined
  if (!i || typeof i !== 'object' || typeof i.name !== 'string' || typeof i.vault_id !== 'string') return null
  return { name: i.name.slice(0, 200), vaultId: i.vault_id.slice(0, 64) }
}

/**
 * Exchanges this CI run's identity token for a short envkeep access token
 * (RFC 8693 at the server's token endpoint, for the CLI's client and the env
 * API). The result lives in memory only: nothing is written to disk.
 */
export async function exchangeCiIdentity(
  baseUrl: string,
  source: CiTokenSource,
  env: CiEnv,
  deps: OAuthDeps & { now: () => Date },
  /** the vault (id or name) the run reads: the server then uses that vault's CI identity only */
  vault?: string,
): Promise<CiAccess> {
  const subject = await identityToken(source, env, deps)
  if (subject.length === 0 || subject.length > MAX_ID_TOKEN_BYTES) throw new CliError('ENVKEEP_OIDC_TOKEN does not hold an identity token')
  const as = await discover(baseUrl, deps)
  if (!(as.grant_types_supported ?? []).includes(GRANT)) {
    throw new CliError(`${baseUrl} does not offer CI sign-in (no token exchange in its metadata)`)
  }
  const client = clientFor(baseUrl)
  try {
    const res = await oauth.genericTokenEndpointRequest(
      as,
      client,
      oauth.None(),
      GRANT,
      { subject_token: subject, subject_token_type: JWT_TYPE, resource: `${baseUrl}/api/env`, ...(vault ? { vault } : {}) },
      { [oauth.customFetch]: deps.fetch, [oauth.allowInsecureRequests]: baseUrl.startsWith('http:'), signal: AbortSignal.timeout(deps.timeoutMs) },
    )
    const r = await oauth.processGenericTokenEndpointResponse(as, client, res)
    const expiresIn = typeof r.expires_in === 'number' && r.expires_in > 0 ? r.expires_in : 300
    return { accessToken: r.access_token, expiresAt: deps.now().getTime() + expiresIn * 1000, identity: identityOf(r) }
  } catch (err) {
    const e = oauthFailure(`${baseUrl} refused this CI run's identity`, baseUrl, err)
    throw err instanceof oauth.ResponseBodyError
      ? new CliError(e.message, {
          exitCode: EXIT.needsSignIn,
          ...(e.server ? { server: e.server } : {}),
          hint: "check the vault's CI identity (issuer, audience, subject pattern, claims) against this run; the server log has the reason under the ref",
          cause: err,
        })
      : e
  }
}

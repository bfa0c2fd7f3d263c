import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import * as oauth from 'oauth4webapi'
import { CliError, describeNetworkFailure, signInError, usageError, type ServerReason } from './errors.js'
import { EXIT } from './exit-codes.js'
import { sameOriginUrl, tooLargeIn } from './untrusted.js'

/**
 * The OAuth side of the CLI, all protocol work done by oauth4webapi:
 * discovery, PKCE S256, the authorization response check (state and iss),
 * the code exchange and refresh with `resource`, and revocation.
 */

export const SCOPE_READ = 'env:read'
export const SCOPE_PUSH = 'env:push'

export interface OAuthDeps {
  readonly fetch: typeof fetch
  readonly timeoutMs: number
}

export interface TokenSet {
  readonly accessToken: string
  readonly refreshToken: string
  /** Seconds, as the server gave it. */
  readonly expiresIn: number
  readonly scope: string
  /** Who signed in, as the server says (an extra member of its answer): for display only. */
  readonly person?: { readonly email: string; readonly name: string }
}

/** The server's `envkeep_person`, when it is two bounded strings; anything else is ignored. */
export function personOf(r: Record<string, unknown>): { email: string; name: string } | undefined {
  const p = r.envkeep_person as Record<string, unknown> | undefined
  if (!p || typeof p !== 'object' || typeof p.email !== 'string' || typeof p.name !== 'string') return undefined
  if (p.email.length > 320 || p.name.length > 200) return undefined
  return { email: p.email, name: p.name }
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]'])

/** A host name of this machine (`localhost`, 127.x.y.z, `[::1]`): where plain http crosses no network. */
export function isLoopbackHost(hostname: string): boolean {
  // an address, not a name that starts like one (127.0.0.1.nip.io is on the network)
  return LOOPBACK_HOSTS.has(hostname) || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname)
}

/**
 * Checks and normalizes a base URL: http(s), no query, fragment or
 * credentials, no trailing slash. Plain http only for a server on this
 * machine, unless ENVKEEP_ALLOW_HTTP=1.
 */
export function normalizeBaseUrl(input: string, allowHttp: boolean): string {
  let url: URL
  try {
    url = new URL(input)
  } catch {
    throw usageError(`the base URL is not an absolute URL`, 'give it like --base-url https://envkeep.example.com')
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw usageError('the base URL must start with https://')
  if (url.search || url.hash || url.username || url.password) throw usageError('the base URL must have no query, fragment or credentials')
  if (url.protocol === 'http:' && !allowHttp && !isLoopbackHost(url.hostname)) {
    throw usageError(
      `refusing plain http to ${url.host}: tokens and values would cross the network unencrypted`,
      'use https, or set ENVKEEP_ALLOW_HTTP=1 if you really mean it',
    )
  }
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`
}

function requestOptions(baseUrl: string, deps: OAuthDeps) {
  return {
    [oauth.customFetch]: deps.fetch,
    [oauth.allowInsecureRequests]: baseUrl.startsWith('http:'),
    signal: AbortSignal.timeout(deps.timeoutMs),
  }
}

/** The server's error record from an OAuth error body (RFC 6749 code, description, where, ref). */
function oauthReason(err: oauth.ResponseBodyError): ServerReason {
  const body = err.cause as Record<string, unknown>
  return {
    status: err.status,
    error: err.error,
    ...(err.error_description ? { message: err.error_description } : {}),
    ...(typeof body.where === 'string' ? { where: body.where } : {}),
    ...(typeof body.ref === 'string' ? { ref: body.ref } : {}),
  }
}

/** Turns whatever an OAuth call threw into a CliError with the CLI's sentence first. */
export function oauthFailure(sentence: string, baseUrl: string, err: unknown): CliError {
  if (err instanceof CliError) return err
  const big = tooLargeIn(err)
  if (big) return new CliError(`${sentence}: ${big.message}; refusing to read it`, { cause: err })
  if (err instanceof oauth.ResponseBodyError) return new CliError(sentence, { server: oauthReason(err), cause: err })
  if (err instanceof oauth.AuthorizationResponseError) {
    return new CliError(sentence, {
      server: { status: 302, error: err.error, ...(err.error_description ? { message: err.error_description } : {}) },
      cause: err,
    })
  }
  if (err instanceof oauth.OperationProcessingError) {
    const status = err.cause instanceof Response ? err.cause.status : undefined
    return new CliError(`${sentence}: the server's answer did not pass the OAuth checks (${err.message})`, {
      ...(status !== undefined ? { server: { status } } : {}),
      cause: err,
    })
  }
  if (err instanceof oauth.UnsupportedOperationError) return new CliError(`${sentence}: ${err.message}`, { cause: err })
  return new CliError(sentence, { network: { host: new URL(baseUrl).host, failure: describeNetworkFailure(err) }, cause: err })
}

/**
 * Reads the authorization server metadata. The issuer is the base URL; the
 * document is at RFC 8414's place, and for a base URL with a path also tried
 * under the base URL, where an embedding app serves it.
 */
export async function discover(baseUrl: string, deps: OAuthDeps): Promise<oauth.AuthorizationServer> {
  const issuer = new URL(baseUrl)
  const sentence = `could not read the sign-in settings of ${baseUrl}`
  try {
    let res = await oauth.discoveryRequest(issuer, { ...requestOptions(baseUrl, deps), algorithm: 'oauth2' })
    if (res.status === 404 && issuer.pathname !== '/') {
      res = await deps.fetch(`${baseUrl}/.well-known/oauth-authorization-server`, {
        headers: { accept: 'application/json' },
        redirect: 'manual',
        signal: AbortSignal.timeout(deps.timeoutMs),
      })
    }
    if (res.status === 404) {
      throw new CliError(`${sentence}: it does not look like an envkeep server (no OAuth metadata)`, { server: { status: 404 } })
    }
    const as = await oauth.processDiscoveryResponse(issuer, res)
    if (!as.authorization_endpoint || !as.token_endpoint) {
      throw new CliError(`${sentence}: the metadata lacks the authorization or token endpoint`)
    }
    // the browser is sent to the authorization endpoint and the code goes to the token
    // endpoint: both must be http(s) on the issuer's own origin, never file:, javascript: or elsewhere
    for (const endpoint of [as.authorization_endpoint, as.token_endpoint, as.revocation_endpoint]) {
      if (endpoint !== undefined) sameOriginUrl(endpoint, baseUrl, sentence)
    }
    return as
  } catch (err) {
    throw oauthFailure(sentence, baseUrl, err)
  }
}

export function clientFor(baseUrl: string): oauth.Client {
  return { client_id: `${baseUrl}/cli/oauth-client.json`, token_endpoint_auth_method: 'none' }
}

function tokenSet(r: oauth.TokenEndpointResponse, fallbackScope: string): TokenSet {
  if (!r.refresh_token) throw new CliError('the server gave no refresh token')
  return {
    accessToken: r.access_token,
    refreshToken: r.refresh_token,
    expiresIn: typeof r.expires_in === 'number' && r.expires_in > 0 ? r.expires_in : 3600,
    scope: typeof r.scope === 'string' ? r.scope : fallbackScope,
    ...(personOf(r) ? { person: personOf(r)! } : {}),
  }
}

export interface LoopbackListener {
  readonly redirectUri: string
  /** Resolves with the callback URL whose `state` is ours; other requests get a 400 and are ignored. */
  readonly callback: Promise<URL>
  close(): void
}

const DONE_PAGE = `<!doctype html><meta charset="utf-8"><title>envkeep</title><p>envkeep: you can close this tab and return to the terminal.</p>\n`

function listenOn(server: Server, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error) => {
      server.off('listening', onListening)
      reject(err)
    }
    const onListening = () => {
      server.off('error', onError)
      resolve((server.address() as AddressInfo).port)
    }
    server.once('error', onError)
    server.once('listening', onListening)
    server.listen({ host, port: 0, exclusive: true })
  })
}

/**
 * A one-shot HTTP listener for the redirect: 127.0.0.1, else [::1], a random port, path /callback.
 * With `doneBase` (the service's base URL) it answers 303 to `{doneBase}/cli/signed-in` or `/cli/denied`.
 */
export async function listenForCallback(state: string, timeoutMs: number, doneBase?: string): Promise<LoopbackListener> {
  let settle!: { resolve: (u: URL) => void; reject: (e: Error) => void }
  const callback = new Promise<URL>((resolve, reject) => {
    settle = { resolve, reject }
  })
  let base = ''
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', base)
    const headers = { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', 'content-security-policy': "default-src 'none'" }
    if (req.method !== 'GET' || url.pathname !== '/callback' || url.searchParams.get('state') !== state) {
      res.writeHead(400, headers).end('<!doctype html><p>Not a callback for this sign-in.</p>\n')
      return
    }
    // With the service's base URL, the tab ends on its styled page (nothing from the answer in that URL).
    const outcome = url.searchParams.get('error') === 'access_denied' ? 'denied' : url.searchParams.has('error') ? null : 'signed-in'
    if (doneBase && outcome) res.writeHead(303, { ...headers, connection: 'close', location: `${doneBase}/cli/${outcome}` }).end()
    else res.writeHead(200, { ...headers, connection: 'close' }).end(DONE_PAGE)
    settle.resolve(url)
  })
  let host = '127.0.0.1'
  let port: number
  try {
    port = await listenOn(server, host)
  } catch {
    host = '::1'
    try {
      port = await listenOn(server, host)
    } catch (err) {
      throw new CliError('could not listen on 127.0.0.1 or [::1] for the sign-in callback', { cause: err })
    }
  }
  const authority = host === '::1' ? `[::1]:${port}` : `127.0.0.1:${port}`
  base = `http://${authority}`
  const timer = setTimeout(() => {
    settle.reject(new CliError(`no sign-in arrived within ${Math.round(timeoutMs / 60_000)} minutes`, { hint: 'run envkeep login again' }))
  }, timeoutMs)
  timer.unref()
  const close = () => {
    clearTimeout(timer)
    server.close()
    server.closeAllConnections()
  }
  return { redirectUri: `${base}/callback`, callback, close }
}

export function newState(): string {
  return oauth.generateRandomState()
}

export interface AuthorizationRequest {
  readonly url: string
  readonly state: string
  readonly codeVerifier: string
}

export async function buildAuthorizationRequest(
  as: oauth.AuthorizationServer,
  baseUrl: string,
  redirectUri: string,
  scope: string,
  state: string,
): Promise<AuthorizationRequest> {
  const codeVerifier = oauth.generateRandomCodeVerifier()
  const url = new URL(as.authorization_endpoint!)
  url.searchParams.set('response_type', 'code')
  url.searchParams.set('client_id', clientFor(baseUrl).client_id)
  url.searchParams.set('redirect_uri', redirectUri)
  url.searchParams.set('scope', scope)
  url.searchParams.set('state', state)
  url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(codeVerifier))
  url.searchParams.set('code_challenge_method', 'S256')
  url.searchParams.set('resource', `${baseUrl}/api/env`)
  return { url: url.href, state, codeVerifier }
}

/** Checks the authorization response (state, iss — required —, error) and exchanges the code. */
export async function exchangeCode(
  as: oauth.AuthorizationServer,
  baseUrl: string,
  callbackUrl: URL,
  request: AuthorizationRequest,
  redirectUri: string,
  scope: string,
  deps: OAuthDeps,
): Promise<TokenSet> {
  const client = clientFor(baseUrl)
  try {
    // The spec requires `iss` on every authorization response: insist on it.
    const params = oauth.validateAuthResponse({ ...as, authorization_response_iss_parameter_supported: true }, client, callbackUrl, request.state)
    const res = await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, redirectUri, request.codeVerifier, {
      ...requestOptions(baseUrl, deps),
      additionalParameters: { resource: `${baseUrl}/api/env` },
    })
    return tokenSet(await oauth.processAuthorizationCodeResponse(as, client, res), scope)
  } catch (err) {
    if (err instanceof oauth.AuthorizationResponseError && err.error === 'access_denied') {
      throw new CliError('the sign-in was declined on the consent page', { exitCode: EXIT.needsSignIn, cause: err })
    }
    throw oauthFailure('could not complete the sign-in', baseUrl, err)
  }
}

export interface RefreshTarget {
  readonly baseUrl: string
  readonly issuer: string
  readonly tokenEndpoint: string
  readonly revocationEndpoint: string | null
  readonly refreshToken: string
  readonly scope: string
}

function asFor(t: RefreshTarget): oauth.AuthorizationServer {
  return {
    issuer: t.issuer,
    token_endpoint: t.tokenEndpoint,
    ...(t.revocationEndpoint ? { revocation_endpoint: t.revocationEndpoint } : {}),
  }
}

/**
 * Uses the refresh token once (it rotates). A refused refresh (invalid_grant)
 * means the sign-in has ended: exit 4, sign in again.
 */
export async function refreshTokens(t: RefreshTarget, deps: OAuthDeps): Promise<TokenSet> {
  const as = asFor(t)
  const client = clientFor(t.baseUrl)
  try {
    const res = await oauth.refreshTokenGrantRequest(as, client, oauth.None(), t.refreshToken, {
      ...requestOptions(t.baseUrl, deps),
      additionalParameters: { resource: `${t.baseUrl}/api/env` },
    })
    return tokenSet(await oauth.processRefreshTokenResponse(as, client, res), t.scope)
  } catch (err) {
    if (err instanceof oauth.ResponseBodyError && (err.error === 'invalid_grant' || err.error === 'invalid_token')) {
      throw signInError(
        `your sign-in to ${t.baseUrl} has ended (the server refused to renew it)`,
        `sign in again: envkeep login --base-url ${t.baseUrl}`,
        oauthReason(err),
      )
    }
    throw oauthFailure(`could not renew the sign-in to ${t.baseUrl}`, t.baseUrl, err)
  }
}

/** Revokes a token (RFC 7009); revoking either token ends the whole sign-in. */
export async function revokeToken(t: RefreshTarget, token: string, deps: OAuthDeps): Promise<void> {
  if (!t.revocationEndpoint) throw new CliError(`${t.baseUrl} offers no way to end a sign-in (no revocation endpoint)`)
  const as = asFor(t)
  try {
    const res = await oauth.revocationRequest(as, clientFor(t.baseUrl), oauth.None(), token, requestOptions(t.baseUrl, deps))
    await oauth.processRevocationResponse(res)
  } catch (err) {
    throw oauthFailure(`could not end the sign-in on ${t.baseUrl}`, t.baseUrl, err)
  }
}

import type { ConfigStore, SignIn } from './config-store.js'
import { CliError, describeNetworkFailure, signInError, type ServerReason } from './errors.js'
import { EXIT } from './exit-codes.js'
import { refreshTokens, type OAuthDeps } from './oauth.js'
import { terminalSafe, tooLargeIn } from './untrusted.js'
import { clearFallback } from './fallback.js'
import { CI_TOKEN_HINT } from './ci-sign-in.js'

/** Renew an access token this long before it expires. */
const EXPIRY_SKEW_MS = 60_000
/** Waiting longer than this for a rate limit is not worth it: fail and say when to retry. */
const MAX_RETRY_AFTER_S = 60

export interface ApiDeps extends OAuthDeps {
  readonly now: () => Date
  readonly sleep: (ms: number) => Promise<void>
  /** A line for the person (stderr). */
  readonly notice: (line: string) => void
  /**
   * In a CI run with an identity token and no stored sign-in: exchanges it
   * (once per process) for an access token kept in memory only.
   */
  readonly ciAccessToken?: (() => Promise<string>) | null
  /**
   * The server was named only by a folder's `.envkeep.json` (not by --base-url, ENVKEEP_BASE_URL
   * or the person's own sign-ins): hints never tell the person to sign in there.
   */
  readonly fromLink?: boolean
  /** This is a CI run (CI=true): a missing sign-in is a missing identity token. */
  readonly inCi?: boolean
}

export interface RequestOptions {
  /** The CLI's own sentence for a failure, e.g. `could not read development of vault "app"`. */
  readonly what: string
  readonly method?: 'GET' | 'POST' | 'PUT' | 'DELETE'
  readonly body?: unknown
  /** more request headers (If-None-Match for run --watch) */
  readonly headers?: Readonly<Record<string, string>>
  /** sees the headers of a successful answer (a 304 included), before its body is read */
  readonly onHeaders?: (headers: Headers, status: number) => void
  /** a 304 answers `null` instead of failing (the conditional read of run --watch) */
  readonly allowNotModified?: boolean
  /** Top-level answer fields kept exactly as sent (pull's variables); every other string is made terminal-safe. */
  readonly keepRaw?: readonly string[]
}

export interface ApiClient {
  readonly baseUrl: string
  request<T>(path: string, options: RequestOptions): Promise<T>
}

function notSignedIn(baseUrl: string, fromLink: boolean, ci: boolean): CliError {
  return signInError(
    `not signed in to ${baseUrl}${ci ? ', and this CI run has no identity token' : ''}`,
    ci
      ? CI_TOKEN_HINT
      : fromLink
        ? "this folder's .envkeep.json names that server: check it is yours, then sign in to your server (envkeep login --base-url <your server>)"
        : `sign in first: envkeep login --base-url ${baseUrl}`,
  )
}

async function serverReason(res: Response): Promise<ServerReason> {
  let body: Record<string, unknown> = {}
  try {
    const parsed: unknown = terminalSafe(await res.json())
    if (parsed && typeof parsed === 'object') body = parsed as Record<string, unknown>
  } catch {
    // not JSON, or too large: the status alone
  }
  const str = (k: string) => (typeof body[k] === 'string' ? { [k]: body[k] as string } : {})
  return { status: res.status, ...str('error'), ...str('message'), ...str('where'), ...str('ref') }
}

function retryAfterSeconds(res: Response): number | null {
  const h = res.headers.get('retry-after')
  if (h === null) return null
  if (/^\d+$/.test(h.trim())) return Number(h.trim())
  return null
}

/**
 * The API under `{baseUrl}/api/env`, with the sign-in from the config store.
 * Access tokens are renewed before they expire and once after a 401; every
 * renewal happens under the store's file lock and re-reads the store first,
 * so two commands never present the same refresh token.
 */
export function createApiClient(baseUrl: string, store: ConfigStore, deps: ApiDeps): ApiClient {
  const host = new URL(baseUrl).host

  function fresh(s: SignIn): boolean {
    return s.accessExpiresAt - EXPIRY_SKEW_MS > deps.now().getTime()
  }

  /** Returns a working access token, renewing it under the lock if `stale` (the token that failed) is still the stored one. */
  async function renew(stale: string | null): Promise<string> {
    return store.withLock(async (tx) => {
      const file = await tx.read()
      const s = file.signIns[baseUrl]
      if (!s) throw notSignedIn(baseUrl, deps.fromLink === true, deps.inCi === true)
      // Another command may have renewed it while we waited for the lock.
      if (s.accessToken !== stale && fresh(s)) return s.accessToken
      let tokens: Awaited<ReturnType<typeof refreshTokens>>
      try {
        tokens = await refreshTokens(s, deps)
      } catch (err) {
        if (err instanceof CliError && err.exitCode === EXIT.needsSignIn) {
          // The sign-in has ended on the server: forget it here too.
          delete file.signIns[baseUrl]
          if (file.current === baseUrl) file.current = null
          await tx.write(file)
          // and its offline copies: a revoked sign-in leaves nothing readable behind
          await clearFallback(store.dir, baseUrl)
        }
        throw err
      }
      const next: SignIn = {
        ...s,
        accessToken: tokens.accessToken,
        refreshToken: tokens.refreshToken,
        accessExpiresAt: deps.now().getTime() + tokens.expiresIn * 1000,
        scope: tokens.scope,
        ...(tokens.person ? { person: tokens.person } : {}),
      }
      file.signIns[baseUrl] = next
      await tx.write(file)
      return next.accessToken
    })
  }

  /** True once this client works with a CI run's exchanged token (nothing to renew, nothing stored). */
  let viaCi = false

  async function accessToken(): Promise<string> {
    const s = (await store.read()).signIns[baseUrl]
    if (!s && deps.ciAccessToken) {
      viaCi = true
      return deps.ciAccessToken()
    }
    if (!s) throw notSignedIn(baseUrl, deps.fromLink === true, deps.inCi === true)
    return fresh(s) ? s.accessToken : renew(null)
  }

  async function send(path: string, o: RequestOptions, token: string): Promise<Response> {
    const headers: Record<string, string> = { ...o.headers, authorization: `Bearer ${token}`, accept: 'application/json' }
    let body: string | undefined
    if (o.body !== undefined) {
      headers['content-type'] = 'application/json'
      body = JSON.stringify(o.body)
    }
    try {
      return await deps.fetch(`${baseUrl}${path}`, {
        method: o.method ?? 'GET',
        headers,
        ...(body === undefined ? {} : { body }),
        redirect: 'manual',
        signal: AbortSignal.timeout(deps.timeoutMs),
      })
    } catch (err) {
      const big = tooLargeIn(err)
      if (big) throw new CliError(`${o.what}: ${big.message}; refusing to read it`, { cause: err })
      throw new CliError(o.what, { network: { host, failure: describeNetworkFailure(err) }, cause: err })
    }
  }

  async function request<T>(path: string, o: RequestOptions): Promise<T> {
    const idempotent = (o.method ?? 'GET') === 'GET'
    let token = await accessToken()
    let res = await send(path, o, token)
    if (res.status === 401 && viaCi) {
      throw signInError(
        `${o.what}: ${baseUrl} no longer accepts this CI run's sign-in`,
        "check the vault's CI identity; it may have been removed",
        await serverReason(res),
      )
    }
    if (res.status === 401) {
      await res.body?.cancel()
      token = await renew(token)
      res = await send(path, o, token)
      if (res.status === 401) {
        throw signInError(`${o.what}: ${baseUrl} no longer accepts this sign-in`, `sign in again: envkeep login --base-url ${baseUrl}`, await serverReason(res))
      }
    }
    if (res.status === 429 && idempotent) {
      const wait = retryAfterSeconds(res)
      if (wait !== null && wait <= MAX_RETRY_AFTER_S) {
        await res.body?.cancel()
        deps.notice(`${host} says too many requests; waiting ${wait} s as it asks, then trying once more`)
        await deps.sleep(wait * 1000)
        res = await send(path, o, token)
      }
    }
    if (res.status === 304 && o.allowNotModified) {
      o.onHeaders?.(res.headers, res.status)
      await res.body?.cancel()
      return null as T
    }
    if (!res.ok) {
      const reason = await serverReason(res)
      if (res.status === 429) {
        const wait = retryAfterSeconds(res)
        throw new CliError(o.what, { server: reason, ...(wait !== null ? { hint: `try again in ${wait} s` } : {}) })
      }
      if (res.status === 403 && reason.error === 'push_not_allowed') {
        throw new CliError(`${o.what}: this sign-in may not send .env files`, {
          exitCode: EXIT.needsSignIn,
          server: reason,
          hint: `sign in again allowing it: envkeep login --push --base-url ${baseUrl}`,
        })
      }
      throw new CliError(o.what, { server: reason })
    }
    o.onHeaders?.(res.headers, res.status)
    let parsed: unknown
    try {
      parsed = await res.json()
    } catch (err) {
      const big = tooLargeIn(err)
      if (big) throw new CliError(`${o.what}: ${big.message}; refusing to read it`, { cause: err })
      throw new CliError(`${o.what}: the answer from ${host} was not JSON (HTTP ${res.status})`, { cause: err })
    }
    return terminalSafe(parsed, o.keepRaw) as T
  }

  return { baseUrl, request }
}

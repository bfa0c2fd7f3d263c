import type { FastifyReply, FastifyRequest } from 'fastify'
import type { SignInRecord } from '../adapters/storage.js'
import { tokenHash } from '../crypto/token-hash.js'
import { errors, type ApiError } from '../errors.js'
import type { ResolvedOptions } from '../options.js'

export const SCOPE_READ = 'env:read'
export const SCOPE_PUSH = 'env:push'

/** RFC 6750 b64token, bounded so a huge header is never hashed. */
const BEARER_RE = /^Bearer +([A-Za-z0-9\-._~+/]{1,512}=*) *$/i

declare module 'fastify' {
  interface FastifyRequest {
    /** The sign-in behind the bearer token, set by `authenticate`; null when none is valid. */
    signIn: SignInRecord | null
    /** Why there is no sign-in (a 401 to give once the request is rate limited); null when signed in. */
    envkeepAuthFailure: ApiError | null
  }
  interface FastifyContextConfig {
    /** `false` on routes that answer without a sign-in (405, unknown paths). Default: required. */
    envkeepAuth?: boolean
  }
}

/**
 * Resolves `Authorization: Bearer <token>` to a live sign-in of the
 * command-line client for this resource. Never throws for a bad credential:
 * it records the 401 so the rate limiter can count the request per address
 * first; `requireSignIn` gives it.
 *
 * Only the header counts: a token in the query, any other scheme (Basic…),
 * the header given twice, or cookies alone are refused.
 */
export function createAuthenticate(opts: ResolvedOptions) {
  const unauthorized = (): ApiError => errors.invalidToken(opts.serviceName, opts.resourceMetadataUrl)

  async function resolve(request: FastifyRequest): Promise<SignInRecord | null> {
    const s = await liveSignInOf(request, opts)
    if (!s || s.clientId !== opts.cliClientId || s.resource !== opts.resource || !s.scopes.includes(SCOPE_READ)) return null
    return s
  }

  return async function authenticate(request: FastifyRequest): Promise<void> {
    request.signIn = await resolve(request)
    request.envkeepAuthFailure = request.signIn ? null : unauthorized()
    opts.observer.tokenCheck(request.signIn ? 'valid' : request.headers.authorization === undefined ? 'missing' : 'invalid')
  }
}

/**
 * The bearer token of `Authorization: Bearer <token>`, or null: a token in
 * the query, any other scheme, the header given twice or none at all is no token.
 */
export function bearerTokenOf(request: FastifyRequest): string | null {
  const raw = request.raw.rawHeaders
  let count = 0
  for (let i = 0; i < raw.length; i += 2) if ((raw[i] as string).toLowerCase() === 'authorization') count++
  if (count !== 1) return null
  if (hasQueryToken(request.url)) return null
  const header = request.headers.authorization
  if (typeof header !== 'string') return null
  const m = BEARER_RE.exec(header)
  return m ? (m[1] as string) : null
}

/**
 * The live sign-in behind the request's bearer token, whatever its client and
 * resource (each surface checks those): null when there is no token, or it is
 * unknown, expired, or its sign-in revoked, ended or idle.
 */
export async function liveSignInOf(request: FastifyRequest, opts: ResolvedOptions): Promise<SignInRecord | null> {
  const token = bearerTokenOf(request)
  if (token === null) return null
  // who holds this token: one domain call (one indexed read), whatever surface asks
  return opts.core.domain.signInOfToken(tokenHash(token), opts.signInIdleMs)
}

function hasQueryToken(url: string): boolean {
  const q = url.indexOf('?')
  if (q < 0) return false
  return new URLSearchParams(url.slice(q + 1)).has('access_token')
}

/** Gives the 401 recorded by `authenticate`, unless the route answers without a sign-in. */
export async function requireSignIn(request: FastifyRequest, _reply: FastifyReply): Promise<void> {
  if (request.routeOptions.config.envkeepAuth === false) return
  if (request.envkeepAuthFailure) throw request.envkeepAuthFailure
}

/** The sign-in of a request that passed `requireSignIn`. */
export function signInOf(request: FastifyRequest): SignInRecord {
  if (!request.signIn) throw new Error('envkeep: route reached without a sign-in')
  return request.signIn
}

/** 403 push_not_allowed unless the sign-in was granted `env:push`. Runs before the body is read. */
export async function requirePushScope(request: FastifyRequest): Promise<void> {
  if (!signInOf(request).scopes.includes(SCOPE_PUSH)) throw errors.pushNotAllowed()
}

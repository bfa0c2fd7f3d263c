import type { FastifyReply, FastifyRequest } from 'fastify'
import { classifyFailure } from '../failure-class.js'
import { logFailure } from '../failure-log.js'

/** RFC 6749 / RFC 8707 error codes used by the token and revocation endpoints, plus our 405 and 500. */
export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'invalid_scope'
  | 'invalid_target'
  | 'method_not_allowed'
  | 'rate_limited'
  | 'server_error'
  /** RFC 7591 §3.2.2, the MCP client registration endpoint */
  | 'invalid_redirect_uri'
  | 'invalid_client_metadata'

/** Headers of every token endpoint answer (OAuth 2.1 §3.2.3). */
export const OAUTH_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'cache-control': 'no-store',
  pragma: 'no-cache',
})

/** What RFC 6749 §5.2 allows in `error_description`: %x20-21 / %x23-5B / %x5D-7E. */
const DESCRIPTION_SAFE = /^[\x20\x21\x23-\x5B\x5D-\x7E]*$/

export class OAuthError extends Error {
  readonly status: number
  readonly error: OAuthErrorCode
  readonly description: string
  readonly headers: Readonly<Record<string, string>>
  readonly where: 'OAuth' | 'rate limit'
  /** why, for the log only */
  readonly logDetail: string | undefined

  constructor(
    status: number,
    error: OAuthErrorCode,
    description: string,
    options?: { headers?: Record<string, string>; cause?: unknown; where?: 'OAuth' | 'rate limit'; logDetail?: string },
  ) {
    super(description, options?.cause === undefined ? undefined : { cause: options.cause })
    if (!DESCRIPTION_SAFE.test(description)) throw new TypeError('OAuth error descriptions are ASCII without quote or backslash')
    this.name = 'OAuthError'
    this.status = status
    this.error = error
    this.description = description
    this.headers = options?.headers ?? {}
    this.where = options?.where ?? 'OAuth'
    this.logDetail = options?.logDetail
  }
}

/** One constructor per code; descriptions never contain what the client sent. */
export const oauthErrors = {
  invalidRequest: (d: string): OAuthError => new OAuthError(400, 'invalid_request', d),
  invalidClient: (d: string, headers?: Record<string, string>): OAuthError => new OAuthError(401, 'invalid_client', d, headers ? { headers } : undefined),
  invalidGrant: (d: string): OAuthError => new OAuthError(400, 'invalid_grant', d),
  unsupportedGrantType: (): OAuthError =>
    new OAuthError(400, 'unsupported_grant_type', 'grant_type must be authorization_code, refresh_token or urn:ietf:params:oauth:grant-type:token-exchange'),
  invalidScope: (d: string): OAuthError => new OAuthError(400, 'invalid_scope', d),
  invalidTarget: (d: string): OAuthError => new OAuthError(400, 'invalid_target', d),
  methodNotAllowed: (allow: string): OAuthError => new OAuthError(405, 'method_not_allowed', `this endpoint accepts only ${allow}`, { headers: { allow } }),
  rateLimited: (retryAfterSeconds: number, description: string): OAuthError =>
    new OAuthError(429, 'rate_limited', description, { headers: { 'retry-after': String(retryAfterSeconds) }, where: 'rate limit' }),
  serverError: (cause: unknown): OAuthError => new OAuthError(500, 'server_error', 'an internal error occurred; quote the reference in a report', { cause }),
} as const

/** Anything thrown on an OAuth route, as an OAuthError (classified once, failure-class.ts): Fastify's own errors never reach the wire in their shape. */
export function toOAuthError(err: unknown): OAuthError {
  if (err instanceof OAuthError) return err
  const c = classifyFailure(err)
  if (c.kind === 'client') {
    if (c.problem === 'too_large') return oauthErrors.invalidRequest('the body is too large')
    return oauthErrors.invalidRequest('the request is malformed; send application/x-www-form-urlencoded parameters')
  }
  // a storage failure keeps its status (503/504) but never its detail
  if (c.kind === 'database' && (c.status === 503 || c.status === 504)) {
    return new OAuthError(c.status, 'server_error', 'the database did not answer in time; quote the reference in a report', { cause: err })
  }
  return oauthErrors.serverError(err)
}

/**
 * Renders `{error, error_description, where: "OAuth", ref}` (`where: "rate limit"` for 429) as application/json
 * with no-store, and logs the full record under the ref (never a token, code or body).
 */
export function sendOAuthError(err: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const e = toOAuthError(err)
  const ref = logFailure(request, 'OAuth request', {
    status: e.status,
    error: e.error,
    where: e.where,
    reason: e.description,
    cause: e.cause,
    ...(e.logDetail === undefined ? {} : { detail: e.logDetail }),
  })
  reply.code(e.status).headers(OAUTH_HEADERS).headers(e.headers).type('application/json')
  return reply.send({ error: e.error, error_description: e.description, where: e.where, ref })
}

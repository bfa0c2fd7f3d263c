import { tokenHash } from '../crypto/token-hash.js'
import type { ResolvedOptions } from '../options.js'
import { hasRepeated, param, REPEATED, type RawParams } from './params.js'
import { isWellFormedS256Challenge } from './pkce.js'
import { parseLoopbackRedirect, type LoopbackRedirect } from './redirect-uri.js'
import { parseScope } from './scopes.js'
import { newAuthorizationCode } from './tokens.js'

// The authorization request's checks and its code, shared by the CLI's authorize route
// (routes/oauth/authorize.ts) and the MCP consent (mcp/authorize.ts), so neither imports the other's file.

/** A checked authorization request. */
export interface AuthorizeRequest<R = LoopbackRedirect> {
  readonly clientId: string
  readonly redirectUri: string
  readonly redirect: R
  readonly codeChallenge: string
  readonly resource: string
  /** as asked for (validated); what is granted is decided on the consent page */
  readonly scopes: readonly string[]
  readonly scope: string | undefined
  readonly state: string
}

export type AuthorizeCheck<R = LoopbackRedirect> =
  /** client or redirect URI not acceptable: an error page, never a redirect */
  | { readonly kind: 'page'; readonly why: string }
  /** anything else: back to the client with error, error_description, state, iss */
  | { readonly kind: 'redirect'; readonly redirectUri: string; readonly state: string | undefined; readonly error: string; readonly description: string }
  | { readonly kind: 'ok'; readonly request: AuthorizeRequest<R> }

/** What the rest of the checks need once the client and its redirect URI are known good. */
export interface AuthorizeTarget<R> {
  readonly clientId: string
  readonly redirectUri: string
  readonly redirect: R
  /** the one resource this client may ask for */
  readonly resource: string
  readonly resourceRefusal: string
  readonly parseScope: (scope: string | undefined) => string[] | null
  /** MCP clients may leave out `state` (PKCE protects the code; the official SDK sends none); the CLI must send it */
  readonly stateOptional?: boolean
}

/**
 * Checks an authorization request (query of the GET, or the consent form's
 * hidden fields on the POST). `client_id` and `redirect_uri` first, since
 * until both are known good nothing may be sent to the redirect URI.
 */
export function checkAuthorizeRequest(p: RawParams, opts: ResolvedOptions): AuthorizeCheck {
  const clientId = param(p, 'client_id')
  if (clientId === undefined) return { kind: 'page', why: 'the request names no client (client_id is missing)' }
  if (clientId === REPEATED) return { kind: 'page', why: 'client_id is given more than once' }
  if (clientId !== opts.cliClientId) return { kind: 'page', why: 'this service signs in only its own command-line client' }
  const redirectUri = param(p, 'redirect_uri')
  if (redirectUri === undefined) return { kind: 'page', why: 'the request has no redirect_uri' }
  if (redirectUri === REPEATED) return { kind: 'page', why: 'redirect_uri is given more than once' }
  const redirect = parseLoopbackRedirect(redirectUri)
  if (!redirect) {
    return { kind: 'page', why: 'the redirect_uri is not http://127.0.0.1:<port>/callback or http://[::1]:<port>/callback' }
  }
  return checkAuthorizeParams(p, {
    clientId,
    redirectUri,
    redirect,
    resource: opts.resource,
    resourceRefusal: 'resource must be exactly the env API of this service',
    parseScope,
  })
}

/** The checks after client_id and redirect_uri (which the caller checked): every refusal goes back by redirect. */
export function checkAuthorizeParams<R>(p: RawParams, target: AuthorizeTarget<R>): AuthorizeCheck<R> {
  const { clientId, redirectUri, redirect } = target
  const stateValue = param(p, 'state')
  const state = typeof stateValue === 'string' ? stateValue : undefined
  const fail = (error: string, description: string): AuthorizeCheck<R> => ({ kind: 'redirect', redirectUri, state, error, description })
  if (hasRepeated(p)) return fail('invalid_request', 'a parameter is given more than once')
  if (state === undefined && target.stateOptional !== true) return fail('invalid_request', 'state is required')
  const responseType = param(p, 'response_type')
  if (responseType === undefined) return fail('invalid_request', 'response_type is required')
  if (responseType !== 'code') return fail('unsupported_response_type', 'only response_type=code is supported')
  const method = param(p, 'code_challenge_method')
  if (method === undefined) return fail('invalid_request', 'code_challenge_method=S256 is required')
  if (method !== 'S256') return fail('invalid_request', 'only the S256 code challenge method is supported')
  const challenge = param(p, 'code_challenge')
  if (challenge === undefined) return fail('invalid_request', 'code_challenge is required (PKCE)')
  if (challenge === REPEATED || !isWellFormedS256Challenge(challenge)) {
    return fail('invalid_request', 'code_challenge must be 43 base64url characters')
  }
  const resource = param(p, 'resource')
  if (resource !== target.resource) return fail('invalid_target', target.resourceRefusal)
  const scope = param(p, 'scope')
  const scopes = target.parseScope(scope === REPEATED ? undefined : scope)
  if (scopes === null) return fail('invalid_scope', 'the scope names a scope this service does not have')
  return {
    kind: 'ok',
    request: { clientId, redirectUri, redirect, codeChallenge: challenge, resource, scopes, scope: scope === REPEATED ? undefined : scope, state: state ?? '' },
  }
}

/** `redirect_uri` (which has no query) plus the answer, with `iss` last. */
export function callbackUrl(redirectUri: string, params: Record<string, string | undefined>, issuer: string): string {
  const q = new URLSearchParams()
  for (const [k, v] of Object.entries(params)) if (v !== undefined) q.append(k, v)
  q.append('iss', issuer)
  return `${redirectUri}?${q.toString()}`
}

/** The parameters the consent form carries to its POST, unchanged (`state` only when sent: an MCP client may send none). */
export function hiddenFields(r: AuthorizeRequest<unknown>, personId: string): Record<string, string> {
  const out: Record<string, string> = {
    response_type: 'code',
    client_id: r.clientId,
    redirect_uri: r.redirectUri,
    code_challenge: r.codeChallenge,
    code_challenge_method: 'S256',
    resource: r.resource,
    ...(r.state === '' ? {} : { state: r.state }),
    person: personId,
  }
  if (r.scope !== undefined) out['scope'] = r.scope
  return out
}

/** Stores a new authorization code for an allowed request (only its hash) and returns the code. */
export async function issueCode(opts: ResolvedOptions, r: AuthorizeRequest<unknown>, scopes: readonly string[], personId: string): Promise<string> {
  const now = opts.now()
  const code = newAuthorizationCode()
  await opts.core.domain.saveAuthorizationCode({
    codeHash: tokenHash(code),
    clientId: r.clientId,
    redirectUri: r.redirectUri,
    codeChallenge: r.codeChallenge,
    resource: r.resource,
    scopes,
    personId,
    createdAt: now,
    expiresAt: new Date(now.getTime() + opts.codeTtlMs),
    consumedAt: null,
  })
  return code
}

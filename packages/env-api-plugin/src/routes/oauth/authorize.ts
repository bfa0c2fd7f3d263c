import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { classifyFailure } from '../../failure-class.js'
import { tokenHash } from '../../crypto/token-hash.js'
import fastifyFormbody from '@fastify/formbody'
import type { ResolvedOptions } from '../../options.js'
import { OAuthError } from '../../oauth/oauth-errors.js'
import { asParams, hasRepeated, param, REPEATED, type RawParams } from '../../oauth/params.js'
import { isWellFormedS256Challenge } from '../../oauth/pkce.js'
import { parseLoopbackRedirect, type LoopbackRedirect } from '../../oauth/redirect-uri.js'
import { grantedScopes, parseScope, SCOPE_PUSH } from '../../oauth/scopes.js'
import { newAuthorizationCode } from '../../oauth/tokens.js'
import { consentHeaders, renderAuthorizeErrorPage, renderConsentPage } from '../../pages/consent.js'
import { PAGE_HEADERS } from '../../pages/html.js'
import { newRef } from '../../ref.js'
import { cliClientName } from './client-metadata.js'
import { createMcpAuthorize } from '../../mcp/authorize.js'

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

/**
 * `GET {basePath}/oauth/authorize` and the consent form's POST. The form
 * carries the request in hidden fields; the POST checks it all again, checks
 * the CSRF token and that the same person is signed in, then redirects (303)
 * with `code`, `state` and `iss`, or `error=access_denied`.
 */
export async function authorizeRoutes(app: FastifyInstance, { opts }: { opts: ResolvedOptions }): Promise<void> {
  const path = `${opts.basePath}/oauth/authorize`
  // MCP clients (any client id but the CLI's) are answered by the MCP endpoint's own consent
  const mcp = opts.mcp ? createMcpAuthorize(opts) : null

  // The consent form posts form-encoded fields only.
  app.removeAllContentTypeParsers()
  await app.register(fastifyFormbody)

  function errorPage(request: FastifyRequest, reply: FastifyReply, status: number, why: string): FastifyReply {
    const ref = newRef()
    request.log.info({ ref, route: path, method: request.method, status, where: 'OAuth', reason: why }, 'envkeep authorization request refused')
    return reply
      .code(status)
      .headers(PAGE_HEADERS)
      .type('text/html; charset=utf-8')
      .send(renderAuthorizeErrorPage({ status, why, ref, basePath: opts.basePath, serviceName: opts.serviceName }))
  }

  function answer(request: FastifyRequest, reply: FastifyReply, check: Exclude<AuthorizeCheck<unknown>, { kind: 'ok' }>): FastifyReply {
    if (check.kind === 'page') return errorPage(request, reply, 400, check.why)
    const ref = newRef()
    request.log.info(
      { ref, route: path, method: request.method, error: check.error, where: 'OAuth', reason: check.description },
      'envkeep authorization request refused by redirect',
    )
    // `where` and `ref` ride along (clients ignore unknown parameters, OAuth 2.1 §4.1.2)
    const to = callbackUrl(
      check.redirectUri,
      { error: check.error, error_description: check.description, state: check.state, where: 'OAuth', ref },
      opts.baseUrl,
    )
    return reply.headers(PAGE_HEADERS).redirect(to, 303)
  }

  function signInRedirect(reply: FastifyReply, r: AuthorizeRequest): FastifyReply {
    const q = new URLSearchParams(Object.entries(hiddenFields(r, '')).filter(([k]) => k !== 'person'))
    return reply.headers(PAGE_HEADERS).redirect(opts.people.signInUrl(`${path}?${q.toString()}`), 303)
  }

  function mcpSignIn(reply: FastifyReply, fields: Record<string, string>): FastifyReply {
    return reply.headers(PAGE_HEADERS).redirect(opts.people.signInUrl(`${path}?${new URLSearchParams(fields).toString()}`), 303)
  }

  app.setErrorHandler(function authorizeErrorHandler(err: FastifyError, request, reply) {
    if (err instanceof OAuthError && err.status === 429) {
      void reply.headers(err.headers)
      return errorPage(request, reply, 429, err.description)
    }
    const c = classifyFailure(err)
    if (c.kind === 'bug' || c.kind === 'database' || (c.kind === 'known' && c.error.status >= 500)) {
      const status = 500
      const ref = newRef()
      request.log.error({ ref, route: path, method: request.method, status, where: 'OAuth', kind: err.name, stack: err.stack }, 'envkeep authorization failed')
      return reply
        .code(500)
        .headers(PAGE_HEADERS)
        .type('text/html; charset=utf-8')
        .send(
          renderAuthorizeErrorPage({
            status: 500,
            why: 'an internal error occurred; quote the reference in a report',
            ref,
            basePath: opts.basePath,
            serviceName: opts.serviceName,
          }),
        )
    }
    if (c.kind === 'client' && c.problem === 'csrf') {
      return errorPage(request, reply, 403, 'the form check failed (the page was too old or not ours); start the sign-in again')
    }
    return errorPage(request, reply, 400, 'the request is malformed')
  })

  app.get(path, async function authorizeRequest(request: FastifyRequest, reply: FastifyReply) {
    if (mcp?.handles(asParams(request.query))) return mcp.show(request, reply, { errorPage, answer, signInRedirect: mcpSignIn })
    const check = checkAuthorizeRequest(asParams(request.query), opts)
    if (check.kind !== 'ok') return answer(request, reply, check)
    const r = check.request
    const person = await opts.people.currentPerson(request)
    if (!person) return signInRedirect(reply, r)
    const csrfToken = reply.generateCsrf()
    const page = renderConsentPage({
      serviceName: opts.serviceName,
      clientName: cliClientName(opts),
      clientHost: new URL(opts.cliClientId).host,
      redirectHost: `${r.redirect.host}:${r.redirect.port}`,
      pushRequested: r.scopes.includes(SCOPE_PUSH),
      personName: person.name,
      personEmail: person.email,
      csrfToken,
      action: path,
      hidden: hiddenFields(r, person.id),
      basePath: opts.basePath,
      signOutHref: opts.people.signOutUrl?.() ?? null,
    })
    return reply.code(200).headers(consentHeaders(r.redirect.host, r.redirect.port)).type('text/html; charset=utf-8').send(page)
  })

  app.post(path, { preValidation: app.csrfProtection }, async function consentAnswer(request: FastifyRequest, reply: FastifyReply) {
    const body = asParams(request.body)
    if (mcp?.handles(body)) return mcp.decide(request, reply, { errorPage, answer, signInRedirect: mcpSignIn })
    const check = checkAuthorizeRequest(body, opts)
    if (check.kind !== 'ok') return answer(request, reply, check)
    const r = check.request
    const person = await opts.people.currentPerson(request)
    if (!person) return signInRedirect(reply, r)
    if (param(body, 'person') !== person.id) {
      return errorPage(request, reply, 400, 'the consent form was shown to another person; start the sign-in again')
    }
    if (param(body, 'decision') !== 'allow') {
      return answer(request, reply, {
        kind: 'redirect',
        redirectUri: r.redirectUri,
        state: r.state,
        error: 'access_denied',
        description: 'the person denied the sign-in',
      })
    }
    const code = await issueCode(opts, r, grantedScopes(r.scopes, param(body, 'allow_push') === 'yes'), person.id)
    return reply.headers(PAGE_HEADERS).redirect(callbackUrl(r.redirectUri, { code, state: r.state }, opts.baseUrl), 303)
  })
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

import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { classifyFailure } from '../../failure-class.js'
import fastifyFormbody from '@fastify/formbody'
import type { ResolvedOptions } from '../../options.js'
import { callbackUrl, checkAuthorizeRequest, hiddenFields, issueCode, type AuthorizeCheck, type AuthorizeRequest } from '../../oauth/authorize-request.js'
import { OAuthError } from '../../oauth/oauth-errors.js'
import { asParams, param } from '../../oauth/params.js'
import { grantedScopes, SCOPE_PUSH } from '../../oauth/scopes.js'
import { consentHeaders, renderAuthorizeErrorPage, renderConsentPage } from '../../pages/consent.js'
import { PAGE_HEADERS } from '../../pages/html.js'
import { newRef } from '../../ref.js'
import { cliClientName } from './client-metadata.js'
import { createMcpAuthorize } from '../../mcp/authorize.js'

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

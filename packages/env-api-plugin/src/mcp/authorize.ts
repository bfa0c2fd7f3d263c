import type { FastifyReply, FastifyRequest } from 'fastify'
import type { ResolvedOptions } from '../options.js'
import { asParams, param, REPEATED, type RawParams } from '../oauth/params.js'
import { PAGE_HEADERS } from '../pages/html.js'
import { callbackUrl, checkAuthorizeParams, hiddenFields, issueCode, type AuthorizeCheck, type AuthorizeRequest } from '../oauth/authorize-request.js'
import { knownOnlyByLocalhost, mcpClientsOf, type McpClient } from './clients.js'
import { mcpConsentHeaders, renderMcpConsentPage } from './consent-page.js'
import { redirectMatches, redirectTarget } from './redirect.js'
import { grantedMcpScopes, MCP_PROPOSE, parseMcpScope } from './scopes.js'

/** The authorize route's own answers, lent to the MCP branch so both speak alike. */
export interface AuthorizeAnswers {
  errorPage(request: FastifyRequest, reply: FastifyReply, status: number, why: string): FastifyReply
  answer(request: FastifyRequest, reply: FastifyReply, check: Exclude<AuthorizeCheck<unknown>, { kind: 'ok' }>): FastifyReply
  signInRedirect(reply: FastifyReply, fields: Record<string, string>): FastifyReply
}

type Checked = { readonly ok: true; readonly client: McpClient; readonly request: AuthorizeRequest<null> } | { readonly ok: false; readonly sent: FastifyReply }

/**
 * `/oauth/authorize` for MCP clients: the client is found (registered, or
 * by its metadata document), the redirect URI must be one it listed, the
 * resource must be `{baseUrl}/mcp`, scopes are `mcp:read` and `mcp:propose`;
 * then the same ladder as the CLI's (state, response type, PKCE S256).
 */
export function createMcpAuthorize(opts: ResolvedOptions) {
  const mcp = opts.mcp
  if (!mcp) throw new Error('envkeep: the MCP endpoint is off')
  const clients = mcpClientsOf(opts)
  const path = `${opts.basePath}/oauth/authorize`

  /** Any single client_id but the CLI's is an MCP client's. */
  function handles(p: RawParams): boolean {
    const id = param(p, 'client_id')
    return typeof id === 'string' && id !== opts.cliClientId
  }

  async function check(request: FastifyRequest, reply: FastifyReply, p: RawParams, a: AuthorizeAnswers): Promise<Checked> {
    const clientId = param(p, 'client_id') as string
    const found = await clients.find(clientId)
    if (!found.ok) return { ok: false, sent: a.errorPage(request, reply, 400, found.why) }
    const redirectUri = param(p, 'redirect_uri')
    if (redirectUri === undefined) return { ok: false, sent: a.errorPage(request, reply, 400, 'the request has no redirect_uri') }
    if (redirectUri === REPEATED) return { ok: false, sent: a.errorPage(request, reply, 400, 'redirect_uri is given more than once') }
    if (!redirectMatches(redirectUri, found.client.redirectUris)) {
      return { ok: false, sent: a.errorPage(request, reply, 400, 'the redirect_uri is not one this client registered') }
    }
    const c = checkAuthorizeParams(p, {
      clientId,
      redirectUri,
      redirect: null,
      resource: mcp?.resource ?? '',
      resourceRefusal: 'resource must be exactly the MCP endpoint of this service',
      parseScope: parseMcpScope,
      stateOptional: true,
    })
    if (c.kind !== 'ok') return { ok: false, sent: a.answer(request, reply, c) }
    return { ok: true, client: found.client, request: c.request }
  }

  /** The request's fields, with the person the form is shown to (none on the way to sign in). */
  function fields(r: AuthorizeRequest<null>, personId: string | null): Record<string, string> {
    const out = hiddenFields(r, personId ?? '')
    if (personId === null) delete out['person']
    return out
  }

  async function show(request: FastifyRequest, reply: FastifyReply, a: AuthorizeAnswers): Promise<FastifyReply> {
    const c = await check(request, reply, asParams(request.query), a)
    if (!c.ok) return c.sent
    const person = await opts.people.currentPerson(request)
    if (!person) return a.signInRedirect(reply, fields(c.request, null))
    const page = renderMcpConsentPage({
      serviceName: opts.serviceName,
      clientName: c.client.name,
      clientOrigin: c.client.kind === 'document' ? `described at ${new URL(c.client.clientId).host}` : 'it registered itself; its name is its own word',
      redirectTarget: redirectTarget(c.request.redirectUri),
      localhostOnly: knownOnlyByLocalhost(c.client),
      proposeRequested: c.request.scopes.includes(MCP_PROPOSE),
      personName: person.name,
      personEmail: person.email,
      csrfToken: reply.generateCsrf(),
      action: path,
      hidden: fields(c.request, person.id),
      basePath: opts.basePath,
    })
    return reply.code(200).headers(mcpConsentHeaders(c.request.redirectUri)).type('text/html; charset=utf-8').send(page)
  }

  async function decide(request: FastifyRequest, reply: FastifyReply, a: AuthorizeAnswers): Promise<FastifyReply> {
    const body = asParams(request.body)
    const c = await check(request, reply, body, a)
    if (!c.ok) return c.sent
    const r = c.request
    const person = await opts.people.currentPerson(request)
    if (!person) return a.signInRedirect(reply, fields(r, null))
    if (param(body, 'person') !== person.id) {
      return a.errorPage(request, reply, 400, 'the consent form was shown to another person; start the sign-in again')
    }
    if (param(body, 'decision') !== 'allow') {
      return a.answer(request, reply, {
        kind: 'redirect',
        redirectUri: r.redirectUri,
        state: r.state || undefined,
        error: 'access_denied',
        description: 'the person denied the sign-in',
      })
    }
    await clients.remember(c.client)
    const code = await issueCode(opts, r, grantedMcpScopes(r.scopes, param(body, 'allow_propose') === 'yes'), person.id)
    return reply.headers(PAGE_HEADERS).redirect(callbackUrl(r.redirectUri, { code, state: r.state || undefined }, opts.baseUrl), 303)
  }

  return { handles, show, decide }
}

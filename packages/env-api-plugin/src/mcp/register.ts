import { randomBytes } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fastifyRateLimit from '@fastify/rate-limit'
import type { ResolvedOptions } from '../options.js'
import { OAUTH_HEADERS, OAuthError, oauthErrors, sendOAuthError } from '../oauth/oauth-errors.js'
import { UNUSED_REGISTRATION_MS } from './clients.js'
import { redirectKind } from './redirect.js'

/** Registrations one address may make an hour. */
export const REGISTRATIONS_PER_HOUR = 20
const MAX_BODY = 16 * 1024

function invalidMetadata(d: string): OAuthError {
  return new OAuthError(400, 'invalid_client_metadata', d)
}

/** Checks an RFC 7591 registration request: a public client with acceptable redirect URIs and the code grant. */
export function registrationProblem(body: unknown): { name: string; redirectUris: string[] } {
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw invalidMetadata('the body must be a JSON object of client metadata')
  const b = body as Record<string, unknown>
  const uris = b['redirect_uris']
  if (!Array.isArray(uris) || uris.length === 0 || uris.length > 10) throw new OAuthError(400, 'invalid_redirect_uri', 'redirect_uris must list 1 to 10 URIs')
  for (const u of uris) {
    if (typeof u !== 'string' || redirectKind(u) === null) {
      throw new OAuthError(
        400,
        'invalid_redirect_uri',
        'each redirect URI must be a loopback http URI, an https URI or a private-use scheme, without query or fragment',
      )
    }
  }
  const auth = b['token_endpoint_auth_method']
  if (auth !== undefined && auth !== 'none') throw invalidMetadata('only public clients are registered: token_endpoint_auth_method must be none')
  const grants = b['grant_types']
  if (grants !== undefined && (!Array.isArray(grants) || !grants.every((g) => g === 'authorization_code' || g === 'refresh_token'))) {
    throw invalidMetadata('grant_types may hold only authorization_code and refresh_token')
  }
  const types = b['response_types']
  if (types !== undefined && (!Array.isArray(types) || !types.every((t) => t === 'code'))) throw invalidMetadata('response_types may hold only code')
  const name = typeof b['client_name'] === 'string' ? b['client_name'].trim().slice(0, 100) : ''
  return { name: name || 'an unnamed MCP client', redirectUris: [...new Set(uris as string[])] }
}

/**
 * `POST {basePath}/oauth/register` (RFC 7591) for MCP clients that cannot use
 * a metadata document (Cursor). Public clients only, rate limited per address;
 * the registration expires a day later unless a person allows the client.
 */
export async function registrationRoutes(app: FastifyInstance, { opts }: { opts: ResolvedOptions }): Promise<void> {
  const domain = opts.core.domain
  if (!opts.mcp || !domain.keepsClientRegistrations()) return
  const path = `${opts.basePath}/oauth/register`
  if (!app.hasDecorator('createRateLimit')) await app.register(fastifyRateLimit, { global: false })
  const limiter = app.createRateLimit({ max: REGISTRATIONS_PER_HOUR, timeWindow: 3_600_000, keyGenerator: (r: FastifyRequest) => `oauth-register:${r.ip}` })
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: MAX_BODY }, (_request, body: string, done) => {
    try {
      done(null, JSON.parse(body))
    } catch {
      done(invalidMetadata('the body is not valid JSON'), undefined)
    }
  })
  app.addContentTypeParser('*', { parseAs: 'string', bodyLimit: MAX_BODY }, (_request, _body, done) => done(null, undefined))
  app.setErrorHandler(function registrationErrorHandler(err: unknown, request: FastifyRequest, reply: FastifyReply) {
    return sendOAuthError(err, request, reply)
  })

  app.post(path, async function registerClient(request: FastifyRequest, reply: FastifyReply) {
    const r = await limiter(request)
    if (!r.isAllowed && r.isExceeded) {
      const retry = Math.max(1, r.ttlInSeconds)
      throw oauthErrors.rateLimited(retry, `this address registered more than ${REGISTRATIONS_PER_HOUR} clients in an hour; retry after ${retry} seconds`)
    }
    const type = String(request.headers['content-type'] ?? '')
      .split(';')[0]
      ?.trim()
      .toLowerCase()
    if (type !== 'application/json') throw invalidMetadata('the body must be application/json')
    const { name, redirectUris } = registrationProblem(request.body)
    const now = opts.now()
    const clientId = `mcp_${randomBytes(24).toString('base64url')}`
    await domain.saveClientRegistration({
      clientId,
      kind: 'registered',
      name,
      redirectUris,
      createdAt: now,
      expiresAt: new Date(now.getTime() + UNUSED_REGISTRATION_MS),
    })
    request.log.info({ route: path, clientId, redirects: redirectUris.map((u) => redirectKind(u)) }, 'envkeep MCP client registered')
    return reply
      .code(201)
      .headers(OAUTH_HEADERS)
      .type('application/json')
      .send({
        client_id: clientId,
        client_id_issued_at: Math.floor(now.getTime() / 1000),
        client_name: name,
        redirect_uris: redirectUris,
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
        scope: 'mcp:read mcp:propose',
      })
  })
}

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { ResolvedOptions } from '../../options.js'
import { authorizationCodeGrant } from '../../oauth/grants/authorization-code.js'
import { refreshTokenGrant } from '../../oauth/grants/refresh-token.js'
import { GRANT_TOKEN_EXCHANGE, tokenExchangeGrant } from '../../oauth/grants/token-exchange.js'
import { createSubjectTokenVerifier } from '../../oauth/workload/verify-subject-token.js'
import { OAUTH_HEADERS, oauthErrors } from '../../oauth/oauth-errors.js'
import { mcpGrantTarget } from '../../mcp/clients.js'
import { asParams, hasRepeated, param, REPEATED, type RawParams } from '../../oauth/params.js'

/** The media type of a request, lower-cased, without parameters. */
export function mediaType(request: FastifyRequest): string {
  const ct = request.headers['content-type']
  return typeof ct === 'string' ? (ct.split(';')[0] ?? '').trim().toLowerCase() : ''
}

/** The form parameters of a token request, or an OAuth invalid_request. */
function formParams(request: FastifyRequest): RawParams {
  if (mediaType(request) !== 'application/x-www-form-urlencoded') {
    throw oauthErrors.invalidRequest('the body must be application/x-www-form-urlencoded')
  }
  const p = asParams(request.body)
  if (hasRepeated(p)) throw oauthErrors.invalidRequest('a parameter is given more than once')
  return p
}

/**
 * `POST {basePath}/oauth/token`. Registered inside the OAuth form context
 * (index.ts), whose parsers and error handler keep every answer in the
 * OAuth shape; other methods get 405.
 */
export async function tokenRoutes(app: FastifyInstance, { opts }: { opts: ResolvedOptions }): Promise<void> {
  const path = `${opts.basePath}/oauth/token`
  // one per plugin instance: caches each trusted issuer's discovery document and JWKS
  const subjectTokens = createSubjectTokenVerifier({ now: opts.now, allowHttpLoopback: opts.ciAllowHttpLoopbackIssuers })

  app.post(path, async function tokenEndpoint(request: FastifyRequest, reply: FastifyReply) {
    const p = formParams(request)
    const grantType = param(p, 'grant_type')
    if (grantType === undefined || grantType === REPEATED) throw oauthErrors.invalidRequest('grant_type is required')
    if (grantType !== 'authorization_code' && grantType !== 'refresh_token' && grantType !== GRANT_TOKEN_EXCHANGE) throw oauthErrors.unsupportedGrantType()
    // A public client: no secret, no Authorization header.
    if (request.headers.authorization !== undefined) {
      throw oauthErrors.invalidClient('this client is public: send no Authorization header', {
        'www-authenticate': `Basic realm="${opts.serviceName}"`,
      })
    }
    if (param(p, 'client_secret') !== undefined) throw oauthErrors.invalidClient('this client is public: send no client_secret')
    const clientId = param(p, 'client_id')
    if (typeof clientId !== 'string') throw oauthErrors.invalidRequest('client_id is required')

    if (grantType === GRANT_TOKEN_EXCHANGE) {
      const exchanged = await tokenExchangeGrant(
        {
          clientId,
          subjectToken: param(p, 'subject_token'),
          subjectTokenType: param(p, 'subject_token_type'),
          resource: param(p, 'resource'),
          scope: param(p, 'scope'),
          requestedTokenType: param(p, 'requested_token_type'),
          actorToken: param(p, 'actor_token'),
          audience: param(p, 'audience'),
          vault: param(p, 'vault'),
        },
        opts,
        opts.core.domain,
        subjectTokens,
      )
      return reply.code(200).headers(OAUTH_HEADERS).type('application/json').send(exchanged)
    }
    // an MCP client's grants are for `{baseUrl}/mcp`; the CLI's (and any unknown client's) as before
    const target = opts.mcp && clientId !== opts.cliClientId ? mcpGrantTarget(opts) : undefined
    const body =
      grantType === 'authorization_code'
        ? await authorizationCodeGrant(
            {
              clientId,
              code: param(p, 'code'),
              codeVerifier: param(p, 'code_verifier'),
              redirectUri: param(p, 'redirect_uri'),
              resource: param(p, 'resource'),
            },
            opts,
            target,
          )
        : await refreshTokenGrant({ clientId, refreshToken: param(p, 'refresh_token'), resource: param(p, 'resource'), scope: param(p, 'scope') }, opts, target)
    return reply.code(200).headers(OAUTH_HEADERS).type('application/json').send(body)
  })

  app.route({
    method: ['GET', 'PUT', 'DELETE', 'PATCH'],
    url: path,
    handler: async function tokenMethodNotAllowed() {
      throw oauthErrors.methodNotAllowed('POST')
    },
  })
}

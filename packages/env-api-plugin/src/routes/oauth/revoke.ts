import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { ResolvedOptions } from '../../options.js'
import { OAUTH_HEADERS, oauthErrors, sendOAuthError } from '../../oauth/oauth-errors.js'
import { asParams, param } from '../../oauth/params.js'
import { tokenHash } from '../../crypto/token-hash.js'
import { mediaType } from './token.js'

/** Longer values are no token of ours; not worth hashing. */
const MAX_TOKEN_LENGTH = 512

/**
 * `POST {basePath}/oauth/revoke` (RFC 7009): `token` and `client_id`, form or
 * JSON. Always 200: unknown, foreign, already revoked or missing tokens
 * change nothing and say nothing. Revoking either token of a sign-in ends the
 * whole sign-in. `token_type_hint` is ignored (both kinds are looked up).
 */
export async function revokeRoutes(app: FastifyInstance, { opts }: { opts: ResolvedOptions }): Promise<void> {
  const path = `${opts.basePath}/oauth/revoke`

  app.post(
    path,
    {
      // A body that does not parse still gets its 200; only a failure of ours is an error.
      errorHandler: function revokeErrorHandler(err: FastifyError, request: FastifyRequest, reply: FastifyReply) {
        if (typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500) {
          return reply.code(200).headers(OAUTH_HEADERS).send()
        }
        return sendOAuthError(err, request, reply)
      },
    },
    async function revokeEndpoint(request: FastifyRequest, reply: FastifyReply) {
      const type = mediaType(request)
      const p = type === 'application/x-www-form-urlencoded' || type === 'application/json' ? asParams(request.body) : {}
      const token = param(p, 'token')
      const clientId = param(p, 'client_id')
      if (typeof token === 'string' && typeof clientId === 'string' && token.length <= MAX_TOKEN_LENGTH) {
        const revoked = await opts.core.domain.revokeByToken(tokenHash(token), clientId)
        request.log.info({ route: path, revoked }, 'envkeep revocation request')
      }
      return reply.code(200).headers(OAUTH_HEADERS).send()
    },
  )

  app.route({
    method: ['GET', 'PUT', 'DELETE', 'PATCH'],
    url: path,
    handler: async function revokeMethodNotAllowed() {
      throw oauthErrors.methodNotAllowed('POST')
    },
  })
}

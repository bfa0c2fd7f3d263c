import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fastifyFormbody from '@fastify/formbody'
import fastifyRateLimit from '@fastify/rate-limit'
import type { ResolvedOptions } from '../../options.js'
import { oauthErrors, sendOAuthError } from '../../oauth/oauth-errors.js'
import { authorizeRoutes } from './authorize.js'
import { clientMetadataRoutes } from './client-metadata.js'
import { metadataRoutes } from './metadata.js'
import { revokeRoutes } from './revoke.js'
import { tokenRoutes } from './token.js'
import { registrationRoutes } from '../../mcp/register.js'

/** A JSON body as parameters (the revocation endpoint accepts it); anything unparsable is no parameters. */
function parseJsonLeniently(_request: FastifyRequest, body: string | Buffer, done: (err: null, body: unknown) => void): void {
  try {
    done(null, JSON.parse(body.toString()))
  } catch {
    done(null, {})
  }
}

/** Any other media type is read and ignored; the routes refuse it in OAuth shape (never Fastify's 415). */
function ignoreBody(_request: FastifyRequest, _body: string | Buffer, done: (err: null, body: unknown) => void): void {
  done(null, undefined)
}

/**
 * The OAuth 2.1 authorization server of the CLI: discovery documents, the
 * client metadata document, authorize + consent, token and revocation.
 * Every URL is built from `baseUrl`, never from the request's Host.
 */
export async function oauthRoutes(app: FastifyInstance, { opts }: { opts: ResolvedOptions }): Promise<void> {
  // Nothing here has a sign-in: every OAuth endpoint counts per client address.
  if (!app.hasDecorator('createRateLimit')) await app.register(fastifyRateLimit, { global: false })
  const keyGenerator = (request: FastifyRequest): string => `oauth-address:${request.ip}`
  const limits = [
    [app.createRateLimit({ max: opts.rateLimit.perMinute, timeWindow: 60_000, keyGenerator }), `more than ${opts.rateLimit.perMinute} requests in a minute`],
    [app.createRateLimit({ max: opts.rateLimit.perDay, timeWindow: 86_400_000, keyGenerator }), `more than ${opts.rateLimit.perDay} requests in a day`],
  ] as const
  app.addHook('onRequest', async function oauthRateLimit(request: FastifyRequest) {
    for (const [limiter, phrase] of limits) {
      const r = await limiter(request)
      if (!r.isAllowed && r.isExceeded) {
        const retry = Math.max(1, r.ttlInSeconds)
        throw oauthErrors.rateLimited(retry, `this address made ${phrase}; retry after ${retry} seconds`)
      }
    }
  })
  app.setErrorHandler(function oauthDocumentErrorHandler(err: unknown, request: FastifyRequest, reply: FastifyReply) {
    return sendOAuthError(err, request, reply)
  })

  await app.register(metadataRoutes, { opts })
  await app.register(clientMetadataRoutes, { opts })
  await app.register(authorizeRoutes, { opts })
  await app.register(registrationRoutes, { opts })
  await app.register(async function oauthFormEndpoints(form: FastifyInstance) {
    form.removeAllContentTypeParsers()
    await form.register(fastifyFormbody)
    form.addContentTypeParser('application/json', { parseAs: 'string' }, parseJsonLeniently)
    form.addContentTypeParser('*', { parseAs: 'string' }, ignoreBody)
    form.setErrorHandler(function oauthErrorHandler(err: unknown, request: FastifyRequest, reply: FastifyReply) {
      return sendOAuthError(err, request, reply)
    })
    await form.register(tokenRoutes, { opts })
    await form.register(revokeRoutes, { opts })
  })
}

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fastifyFormbody from '@fastify/formbody'
import fastifyRateLimit from '@fastify/rate-limit'
import { createSharedLimits, type LimitWindow } from '../../hooks/rate-limit.js'
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
  // Nothing here has a sign-in: every OAuth endpoint counts per client address, in the
  // storage's shared counters when it has them (every process counts alike), else in memory.
  const windows: LimitWindow[] = [
    [60_000, opts.rateLimit.perMinute, `more than ${opts.rateLimit.perMinute} requests in a minute`],
    [86_400_000, opts.rateLimit.perDay, `more than ${opts.rateLimit.perDay} requests in a day`],
  ]
  const keyGenerator = (request: FastifyRequest): string => `oauth-address:${request.ip}`
  const shared = opts.core.domain.sharedCounters()?.countRequest
  if (shared) {
    const overLimit = createSharedLimits(shared, windows)
    app.addHook('onRequest', async function oauthRateLimit(request: FastifyRequest) {
      const over = await overLimit(keyGenerator(request), opts.now())
      if (over) throw oauthErrors.rateLimited(over.wait, `this address made ${over.phrase}; retry after ${over.wait} seconds`)
    })
  } else {
    if (!app.hasDecorator('createRateLimit')) await app.register(fastifyRateLimit, { global: false })
    const limits = windows.map(([timeWindow, max, phrase]) => [app.createRateLimit({ max, timeWindow, keyGenerator }), phrase] as const)
    app.addHook('onRequest', async function oauthRateLimit(request: FastifyRequest) {
      for (const [limiter, phrase] of limits) {
        const r = await limiter(request)
        if (!r.isAllowed && r.isExceeded) {
          const retry = Math.max(1, r.ttlInSeconds)
          throw oauthErrors.rateLimited(retry, `this address made ${phrase}; retry after ${retry} seconds`)
        }
      }
    })
  }
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

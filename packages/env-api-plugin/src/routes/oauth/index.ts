import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fastifyFormbody from '@fastify/formbody'
import type { ResolvedOptions } from '../../options.js'
import { sendOAuthError } from '../../oauth/oauth-errors.js'
import { authorizeRoutes } from './authorize.js'
import { clientMetadataRoutes } from './client-metadata.js'
import { metadataRoutes } from './metadata.js'
import { revokeRoutes } from './revoke.js'
import { tokenRoutes } from './token.js'

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
  await app.register(metadataRoutes, { opts })
  await app.register(clientMetadataRoutes, { opts })
  await app.register(authorizeRoutes, { opts })
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

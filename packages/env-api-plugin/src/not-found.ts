import type { FastifyReply, FastifyRequest } from 'fastify'
import { ApiError } from './errors.js'
import { renderApiError } from './error-handler.js'
import { logFailure } from './failure-log.js'
import { sendErrorPage } from './pages/error.js'

/** The basePath ('' at the root) of a base URL. */
function basePathOf(baseUrl: string): string {
  return new URL(baseUrl).pathname.replace(/\/+$/, '')
}

/** A browser navigating (HTML preferred over JSON) rather than a program. */
export function wantsPage(request: FastifyRequest): boolean {
  const accept = String(request.headers.accept ?? '')
  const htmlAt = accept.indexOf('text/html')
  if (htmlAt === -1) return false
  const jsonAt = accept.indexOf('application/json')
  return jsonAt === -1 || htmlAt < jsonAt
}

/**
 * One not-found answer for a whole server, for the host's `setNotFoundHandler`: a page for
 * browsers, the spec's error record for everything else (with the API's headers: JSON,
 * `no-store, private`). Neither the body nor the log quotes the URL's query, which may carry
 * a setup token, a code or an access token; the log has the path only, under a ref.
 * (`/api/env` answers its own unknown paths, with 405 where a path exists.)
 */
export function envkeepNotFound(baseUrl: string): (request: FastifyRequest, reply: FastifyReply) => FastifyReply {
  const basePath = basePathOf(baseUrl)
  return function notFound(request, reply) {
    const reason = 'nothing is served at this address'
    const what = request.method === 'GET' || request.method === 'HEAD' ? 'opening this address' : 'sending to this address'
    if (wantsPage(request)) {
      const ref = logFailure(request, 'page', { status: 404, error: 'not_found', where: 'web app', reason })
      return sendErrorPage(reply, { status: 404, what, where: 'web app', why: reason, ref, basePath })
    }
    request.envkeepOperation = what
    return renderApiError(new ApiError({ status: 404, code: 'not_found', where: 'web app', reason }), request, reply)
  }
}

import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import { layout, logFailure, PAGE_HEADERS, safeRedirectPath, sendErrorPage, StorageError, type PageFailure, type SafeHtml } from '@envkeep/env-api-plugin'

export type Failure = PageFailure

/**
 * Makes a failure with a new ref and logs its full record under that ref,
 * as the plugin's pages do (never a body, password, token or email).
 */
export function failure(request: FastifyRequest, status: number, what: string, where: string, why: string, cause?: unknown): Failure {
  const ref = logFailure(request, 'page', { status, where, reason: why, cause })
  return { status, what, where, why, ref }
}

export function sendPage(reply: FastifyReply, status: number, title: string, body: SafeHtml, basePath: string): FastifyReply {
  return reply.code(status).headers(PAGE_HEADERS).type('text/html; charset=utf-8').send(layout({ title, body, basePath }))
}

/** A whole error page (status, what, where, why, reference, "Copy details"), the plugin's look. */
export function sendFailurePage(reply: FastifyReply, f: Failure, basePath: string): FastifyReply {
  return sendErrorPage(reply, { ...f, basePath })
}

/** A return path that stays on this service under basePath (encoded for a Location header), else the service's root. */
export function safeReturnTo(raw: string, basePath: string): string {
  return safeRedirectPath(raw, basePath)
}

/**
 * The error handler of a page plugin with forms: a stale or foreign form (CSRF), a form too
 * large or of the wrong type, a database failure, or a bug, each as a whole error page under
 * a ref; `what` names what the person was doing.
 */
export function formErrorHandler(basePath: string, what: string | ((request: FastifyRequest) => string)) {
  return function formPageError(err: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
    const doing = typeof what === 'string' ? what : what(request)
    let f: Failure
    if (err.code === 'FST_CSRF_INVALID_TOKEN' || err.code === 'FST_CSRF_MISSING_SECRET')
      f = failure(request, 403, doing, 'web app', 'the form was not sent from this site or has gone stale; reload the page and try again')
    else if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') f = failure(request, 413, doing, 'web app', 'the form is larger than the server accepts')
    else if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE')
      f = failure(request, 400, doing, 'web app', 'the form must be sent as application/x-www-form-urlencoded')
    else if (err instanceof StorageError) f = failure(request, err.status, doing, 'database', err.message, err)
    else f = failure(request, 500, doing, 'web app', 'an internal error occurred; quote the reference in a report', err)
    return sendFailurePage(reply, f, basePath)
  }
}

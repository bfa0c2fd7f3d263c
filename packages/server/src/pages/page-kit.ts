import type { FastifyReply, FastifyRequest } from 'fastify'
import { layout, logFailure, PAGE_HEADERS, safeRedirectPath, sendErrorPage, type PageFailure, type SafeHtml } from '@envkeep/env-api-plugin'

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

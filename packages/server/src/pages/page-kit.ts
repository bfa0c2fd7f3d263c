import type { FastifyReply, FastifyRequest } from 'fastify'
import { layout, newRef, PAGE_HEADERS, refusalBox, sendErrorPage, type SafeHtml } from '@envkeep/env-api-plugin'

/** The four fields of a failure a person sees, plus its status. */
export interface Failure {
  readonly status: number
  readonly what: string
  readonly where: string
  readonly why: string
  readonly ref: string
}

/**
 * Makes a failure with a new ref and logs its full record under that ref
 * (never a body, password, token or email).
 */
export function failure(request: FastifyRequest, status: number, what: string, where: string, why: string, cause?: unknown): Failure {
  const ref = newRef()
  const record = { ref, route: request.routeOptions?.url ?? null, method: request.method, status, where, reason: why }
  if (status >= 500) {
    request.log.error(
      { ...record, kind: cause instanceof Error ? cause.name : typeof cause, stack: cause instanceof Error ? cause.stack : undefined },
      'envkeep page failed',
    )
  } else request.log.info(record, 'envkeep form refused')
  return { status, what, where, why, ref }
}

/** A refused form submission, at the top of its page; the sentence ends with the reference. */
export function refusal(f: Failure): SafeHtml {
  return refusalBox(f)
}

export function sendPage(reply: FastifyReply, status: number, title: string, body: SafeHtml, basePath: string): FastifyReply {
  return reply
    .code(status)
    .headers(PAGE_HEADERS)
    .type('text/html; charset=utf-8')
    .send(layout({ title, body, basePath }))
}

/** A whole error page (status, what, where, why, reference, "Copy details"), the plugin's look. */
export function sendFailurePage(reply: FastifyReply, f: Failure, basePath: string): FastifyReply {
  return sendErrorPage(reply, { ...f, basePath })
}

/** A form field as one string ('' when absent or repeated). */
export function field(body: unknown, name: string): string {
  const v = (body as Record<string, unknown> | null | undefined)?.[name]
  return typeof v === 'string' ? v : ''
}

/** A return path that stays on this service under basePath, else the service's root. */
export function safeReturnTo(raw: string, basePath: string): string {
  const root = `${basePath}/`
  if (!raw.startsWith('/') || raw.startsWith('//') || raw.includes('\\') || /[\u0000-\u001f]/.test(raw)) return root
  if (basePath !== '' && raw !== basePath && !raw.startsWith(`${basePath}/`)) return root
  return raw
}

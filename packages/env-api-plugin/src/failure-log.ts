import type { FastifyRequest } from 'fastify'
import { newRef } from './ref.js'

export interface Failure {
  readonly status: number
  /** the wire code, when the surface has one */
  readonly error?: string
  readonly where: string
  /** the reason in words: never a value, token or anything the client sent */
  readonly reason: string
  /** what was thrown; its kind and stack are logged for 5xx only */
  readonly cause?: unknown
  /** for the log only (the wire says less, e.g. why an identity token was refused); never a value or token */
  readonly detail?: string
}

/**
 * The one place a failure is recorded: a new ref, and under it the route,
 * method, status, where and reason (plus kind, code and stack for 5xx),
 * never a body, value, token or password. Returns the ref for the answer.
 */
export function logFailure(request: FastifyRequest, surface: 'request' | 'OAuth request' | 'page' | 'MCP request', f: Failure): string {
  const ref = newRef()
  const record = {
    ref,
    route: request.routeOptions?.url ?? null,
    method: request.method,
    status: f.status,
    ...(f.error === undefined ? {} : { error: f.error }),
    where: f.where,
    reason: f.reason,
    ...(f.detail === undefined ? {} : { detail: f.detail }),
  }
  if (f.status >= 500) {
    const cause = f.cause
    request.log.error(
      {
        ...record,
        kind: cause instanceof Error ? cause.name : typeof cause,
        code: (cause as { code?: unknown } | null | undefined)?.code,
        stack: cause instanceof Error ? cause.stack : undefined,
      },
      `envkeep ${surface} failed`,
    )
  } else {
    request.log.info(record, `envkeep ${surface} refused`)
  }
  return ref
}

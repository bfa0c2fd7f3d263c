import type { FastifyReply, FastifyRequest } from 'fastify'
import { type ApiError, errors } from './errors.js'
import { classifyFailure } from './failure-class.js'
import { logFailure } from './failure-log.js'
import { PUSH_BODY_LIMIT } from './options.js'

/** Headers every API answer carries. */
export const API_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'cache-control': 'no-store, private',
})

/**
 * Anything thrown on an API route as an ApiError, from its class
 * (failure-class.ts): our own errors pass through, storage failures keep
 * their SQLSTATE, the framework's client errors become the spec's codes
 * (their message, which may quote the request, never reaches the wire),
 * everything else is a bug.
 */
export function toApiError(err: unknown): ApiError {
  const c = classifyFailure(err)
  switch (c.kind) {
    case 'known':
      return c.error
    case 'database':
      return errors.database(c.error)
    case 'bug':
      return errors.internal(c.cause)
    case 'client':
      if (c.problem === 'too_large') return errors.tooLarge(PUSH_BODY_LIMIT)
      if (c.problem === 'media_type') return errors.unsupportedMediaType()
      if (c.problem === 'validation') return errors.invalidRequest('the request does not match the expected shape')
      if (c.problem === 'content_length') return errors.invalidRequest('the content length does not match the body')
      return errors.invalidRequest('the request is malformed')
  }
}

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * The operation phrase of the current request, naming the vault by its
     * first 8 characters ("reading production of vault 3f2a9c1e"); set by
     * handlers as soon as they know it, used as the start of error messages.
     */
    envkeepOperation: string | null
  }
  interface FastifyContextConfig {
    /** The operation phrase of the route before the handler knows more (see `request.envkeepOperation`); made only for an error. */
    envkeepPhrase?: (request: FastifyRequest) => string
  }
}

/**
 * The one renderer of `{error, message, where, ref}`. Logs the full record
 * (route, status, where, reason, and the stack for bugs) under the ref;
 * never a value, token or body.
 */
export function renderApiError(err: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const e = toApiError(err)
  const operation = request.envkeepOperation ?? request.routeOptions?.config?.envkeepPhrase?.(request) ?? defaultOperation(request)
  const ref = logFailure(request, 'request', { status: e.status, error: e.code, where: e.where, reason: e.reason, cause: e.cause })
  reply.code(e.status).headers(API_HEADERS).headers(e.headers).type('application/json; charset=utf-8')
  return reply.send({ error: e.code, message: `${operation}: ${e.reason}`, where: e.where, ref })
}

function defaultOperation(request: FastifyRequest): string {
  return `${request.method === 'GET' || request.method === 'HEAD' ? 'reading' : 'calling'} the env API`
}

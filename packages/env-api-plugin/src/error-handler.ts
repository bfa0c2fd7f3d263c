import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import { ApiError, StorageError, errors } from './errors.js'
import { logFailure } from './failure-log.js'
import { PUSH_BODY_LIMIT } from './options.js'

/** Headers every API answer carries. */
export const API_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'cache-control': 'no-store, private',
})

/**
 * Turns anything thrown on an API route into an ApiError: our own errors
 * pass through, storage failures keep their SQLSTATE, Fastify's body and
 * media-type errors become the spec's codes, everything else is a bug.
 */
export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err
  // By shape too: a storage adapter may hold another copy of this package.
  if (err instanceof StorageError || isStorageError(err)) return errors.database(err)
  // A client error Fastify raises itself (body over the limit, a media type
  // with no parser, QUERY without a content type): its status holds, its
  // message (which may quote the request) never reaches the wire. JSON
  // syntax errors never get here: the API's own parser answers them.
  const fe = err as Partial<FastifyError> | null
  if (fe && typeof fe.code === 'string' && fe.code.startsWith('FST_ERR_') && typeof fe.statusCode === 'number') {
    if (fe.statusCode === 413) return errors.tooLarge(PUSH_BODY_LIMIT)
    if (fe.statusCode === 415) return errors.unsupportedMediaType()
    if (fe.code === 'FST_ERR_VALIDATION') return errors.invalidRequest('the request does not match the expected shape')
    if (fe.code === 'FST_ERR_CTP_INVALID_CONTENT_LENGTH') return errors.invalidRequest('the content length does not match the body')
    if (fe.statusCode >= 400 && fe.statusCode < 500) return errors.invalidRequest('the request is malformed')
  }
  return errors.internal(err)
}

function isStorageError(err: unknown): err is StorageError {
  if (!(err instanceof Error) || err.name !== 'StorageError') return false
  const e = err as Partial<StorageError>
  return typeof e.sqlstate === 'string' && typeof e.status === 'number'
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
}

/**
 * The one renderer of `{error, message, where, ref}`. Logs the full record
 * (route, status, where, reason, and the stack for bugs) under the ref;
 * never a value, token or body.
 */
export function renderApiError(err: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const e = toApiError(err)
  const operation = request.envkeepOperation ?? defaultOperation(request)
  const ref = logFailure(request, 'request', { status: e.status, error: e.code, where: e.where, reason: e.reason, cause: e.cause })
  reply.code(e.status).headers(API_HEADERS).headers(e.headers).type('application/json; charset=utf-8')
  return reply.send({ error: e.code, message: `${operation}: ${e.reason}`, where: e.where, ref })
}

function defaultOperation(request: FastifyRequest): string {
  return `${request.method === 'GET' || request.method === 'HEAD' ? 'reading' : 'calling'} the env API`
}

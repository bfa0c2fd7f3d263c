import type { FastifyError } from 'fastify'
import { DomainFailure } from './domain/failure.js'
import { ApiError, errors, StorageError } from './errors.js'

/**
 * The one classifier of failures (issue 10, item 10). Whatever is thrown on
 * a route (the API's JSON, the OAuth endpoints' JSON, the pages, the
 * authorize page) is first sorted here, once; each renderer then only
 * chooses its words and shape. So the same SQLite or PostgreSQL error has
 * the same status everywhere, and no renderer quotes a framework message
 * (which may hold the request) to the client.
 */
export type FailureClass =
  /** one of our own errors (ApiError): its status, code, where and reason stand */
  | { readonly kind: 'known'; readonly error: ApiError }
  /** a storage failure: its status comes from the SQLSTATE (503 unreachable, 504 timed out, else 500) */
  | { readonly kind: 'database'; readonly error: StorageError; readonly status: number }
  /** the client sent something the framework refused before our code ran */
  | { readonly kind: 'client'; readonly status: number; readonly problem: ClientProblem }
  /** anything else: a bug, 500, full record only in the log */
  | { readonly kind: 'bug'; readonly cause: unknown }

export type ClientProblem =
  /** body over the limit (413) */
  | 'too_large'
  /** a media type with no parser (415 on the API; a form sent otherwise on pages) */
  | 'media_type'
  /** the body does not match the route's schema */
  | 'validation'
  /** content-length and body disagree */
  | 'content_length'
  /** a form's CSRF check failed (403) */
  | 'csrf'
  /** any other 4xx the framework raised */
  | 'malformed'

const CSRF_CODES = new Set(['FST_CSRF_INVALID_TOKEN', 'FST_CSRF_MISSING_SECRET'])

/** By shape too: a storage adapter may hold another copy of this package. */
function isStorageError(err: unknown): err is StorageError {
  if (err instanceof StorageError) return true
  if (!(err instanceof Error) || err.name !== 'StorageError') return false
  const e = err as Partial<StorageError>
  return typeof e.sqlstate === 'string' && typeof e.status === 'number'
}

/**
 * The domain's failures of the keys as the spec's errors: 503 not_configured,
 * 500 decrypt_failed and 503 server_error while the master key is rotated,
 * `where: encryption`, the same on every surface.
 * (The domain's refusals by a rule are each surface's own: see
 * routes/api/context.ts, pages/domain.ts.)
 */
function keyFailure(err: DomainFailure): ApiError | null {
  if (err.kind === 'not_configured') return errors.notConfigured()
  if (err.kind === 'decrypt_failed') return errors.decryptFailed(err.cause)
  if (err.kind === 'key_rotating') return errors.keyRotating(err.cause)
  return null
}

export function classifyFailure(err: unknown): FailureClass {
  if (err instanceof ApiError) return { kind: 'known', error: err }
  if (err instanceof DomainFailure) {
    const known = keyFailure(err)
    if (known) return { kind: 'known', error: known }
  }
  if (isStorageError(err)) return { kind: 'database', error: err, status: err.status }
  const fe = err as Partial<FastifyError> | null
  const code = typeof fe?.code === 'string' ? fe.code : ''
  const status = typeof fe?.statusCode === 'number' ? fe.statusCode : 0
  if (CSRF_CODES.has(code)) return { kind: 'client', status: 403, problem: 'csrf' }
  if (!code.startsWith('FST_') || status < 400 || status >= 500) return { kind: 'bug', cause: err }
  if (status === 413 || code === 'FST_ERR_CTP_BODY_TOO_LARGE') return { kind: 'client', status: 413, problem: 'too_large' }
  if (status === 415 || code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return { kind: 'client', status: 415, problem: 'media_type' }
  if (code === 'FST_ERR_VALIDATION') return { kind: 'client', status: 400, problem: 'validation' }
  if (code === 'FST_ERR_CTP_INVALID_CONTENT_LENGTH') return { kind: 'client', status: 400, problem: 'content_length' }
  return { kind: 'client', status, problem: 'malformed' }
}

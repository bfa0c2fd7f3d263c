/**
 * Wire errors of the API: one class, one constructor per row of the spec's
 * error table. The error handler (error-handler.ts) is the only renderer.
 *
 * `message` on the wire is `<operation phrase>: <reason>`, where the phrase
 * names the operation and the vault by the first 8 characters of its id, e.g.
 * `reading production of vault 3f2a9c1e: your role (editor) cannot read owners-only environments`.
 * Nothing the client sent is ever put in a reason.
 */

export type Where =
  | 'env API'
  | 'env API: database'
  | 'database'
  | "database (only what's shared with you is visible)"
  | 'database (your role)'
  | 'encryption'
  | 'rate limit'
  | 'OAuth'
  | 'web app'
  | `database (function ${string})`
  | `env API: ${string}`
  | `sign-in (${string})`

export interface ApiErrorInit {
  readonly status: number
  readonly code: string
  readonly where: Where
  /** the `why`: a sentence in words, never containing client input, values, tokens or keys */
  readonly reason: string
  readonly headers?: Readonly<Record<string, string>>
  readonly cause?: unknown
}

export class ApiError extends Error {
  readonly status: number
  readonly code: string
  readonly where: Where
  readonly reason: string
  readonly headers: Readonly<Record<string, string>>

  constructor(init: ApiErrorInit) {
    super(init.reason, init.cause === undefined ? undefined : { cause: init.cause })
    this.name = 'ApiError'
    this.status = init.status
    this.code = init.code
    this.where = init.where
    this.reason = init.reason
    this.headers = init.headers ?? {}
  }
}

/**
 * A database failure, thrown by storage adapters. `sqlstate` uses the spec's
 * vocabulary (23505, 57014, 55P03, 08006, …); `detail` names the constraint,
 * table or function, never a value of a row.
 */
export class StorageError extends Error {
  readonly sqlstate: string
  readonly detail: string | undefined
  constructor(sqlstate: string, detail?: string, options?: { cause?: unknown }) {
    super(`${sqlstate} ${SQLSTATE_NAMES[sqlstate] ?? 'database error'}${detail ? ` (${detail})` : ''}`, options)
    this.name = 'StorageError'
    this.sqlstate = sqlstate
    this.detail = detail
  }

  /** 503 when the database is unreachable, 504 when it timed out, else 500. */
  get status(): number {
    if (this.sqlstate === '57014' || this.sqlstate === '55P03') return 504
    if (this.sqlstate === '08006' || this.sqlstate === '57P01' || this.sqlstate === '53300') return 503
    return 500
  }
}

export const SQLSTATE_NAMES: Readonly<Record<string, string>> = Object.freeze({
  '23505': 'unique violation',
  '23503': 'foreign key violation',
  '23514': 'check violation',
  '42501': 'permission denied',
  '57014': 'statement timeout',
  '55P03': 'lock timeout',
  '40001': 'serialization failure',
  '40P01': 'deadlock detected',
  '08006': 'connection failure',
  '57P01': 'admin shutdown',
  '53300': 'too many connections',
  '58030': 'io error',
  XX000: 'internal error',
})

const NOT_SHARED = "database (only what's shared with you is visible)" as const

export const errors = {
  invalidRequest: (reason: string): ApiError => new ApiError({ status: 400, code: 'invalid_request', where: 'env API', reason }),
  invalidToken: (realm: string, resourceMetadata: string): ApiError =>
    new ApiError({
      status: 401,
      code: 'invalid_token',
      where: 'env API',
      reason: 'the request has no valid access token',
      headers: { 'www-authenticate': `Bearer realm="${realm}", resource_metadata="${resourceMetadata}"` },
    }),
  forbidden: (reason: string): ApiError => new ApiError({ status: 403, code: 'forbidden', where: 'database (your role)', reason }),
  pushNotAllowed: (): ApiError =>
    new ApiError({
      status: 403,
      code: 'push_not_allowed',
      where: 'env API',
      reason: 'this sign-in was not allowed to send .env files; sign in again with `envkeep login --push`',
    }),
  notFound: (what: string): ApiError =>
    new ApiError({ status: 404, code: 'not_found', where: NOT_SHARED, reason: `${what} does not exist or is not shared with you` }),
  methodNotAllowed: (allow: readonly string[]): ApiError =>
    new ApiError({
      status: 405,
      code: 'method_not_allowed',
      where: 'env API',
      reason: `this path accepts only ${allow.join(', ')}`,
      headers: { allow: allow.join(', ') },
    }),
  tooLarge: (limit: number): ApiError =>
    new ApiError({ status: 413, code: 'too_large', where: 'env API', reason: `the body is over the limit of ${limit} bytes` }),
  unsupportedMediaType: (): ApiError =>
    new ApiError({
      status: 415,
      code: 'unsupported_media_type',
      where: 'env API',
      reason: 'the body must be application/json',
    }),
  rateLimited: (retryAfterSeconds: number, reason: string): ApiError =>
    new ApiError({
      status: 429,
      code: 'rate_limited',
      where: 'rate limit',
      reason,
      headers: { 'retry-after': String(retryAfterSeconds) },
    }),
  decryptFailed: (cause?: unknown): ApiError =>
    new ApiError({ status: 500, code: 'decrypt_failed', where: 'encryption', reason: 'a value did not decrypt; nothing was delivered', cause }),
  /** a data key rewrapped while it was read: `admin rotate-master-key` is under way */
  keyRotating: (cause?: unknown): ApiError =>
    new ApiError({
      status: 503,
      code: 'server_error',
      where: 'encryption',
      reason: 'the master key is being rotated; nothing was changed, try again in a moment',
      headers: { 'retry-after': '1' },
      cause,
    }),
  notConfigured: (): ApiError => new ApiError({ status: 503, code: 'not_configured', where: 'encryption', reason: 'the server has no key for variables' }),
  storageLimit: (reason: string): ApiError => new ApiError({ status: 507, code: 'storage_limit', where: 'env API', reason }),
  /** A database failure: status from the SQLSTATE; the reason is the code and its name. */
  database: (err: StorageError): ApiError =>
    new ApiError({ status: err.status, code: 'server_error', where: 'env API: database', reason: err.message, cause: err }),
  /** A bug: generic on the wire, full record in the log under the ref. */
  internal: (cause: unknown): ApiError =>
    new ApiError({ status: 500, code: 'server_error', where: 'env API', reason: 'an internal error occurred; quote the reference in a report', cause }),
} as const

/** The vault as the spec's messages name it: the first 8 characters of its id (the domain's rule). */
export { vaultTag } from './domain/failure.js'

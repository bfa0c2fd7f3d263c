import { EXIT } from './exit-codes.js'

/** What the server said about a failure (the spec's error record), never anything the client sent. */
export interface ServerReason {
  readonly status: number
  readonly error?: string
  readonly message?: string
  readonly where?: string
  readonly ref?: string
}

/** A request that got no answer: the host and how it failed. */
export interface NetworkFailure {
  readonly host: string
  readonly failure: string
}

export interface CliErrorOptions {
  exitCode?: number
  server?: ServerReason
  network?: NetworkFailure
  /** A line telling the user what to do next, e.g. which command to run. */
  hint?: string
  cause?: unknown
}

/**
 * A failure the CLI reports and exits on. `message` is the CLI's own sentence;
 * the server's reason, the network failure and a hint are rendered after it.
 * Nothing in here may hold a value or a token.
 */
export class CliError extends Error {
  readonly exitCode: number
  readonly server: ServerReason | undefined
  readonly network: NetworkFailure | undefined
  readonly hint: string | undefined
  constructor(message: string, options: CliErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.name = 'CliError'
    this.exitCode = options.exitCode ?? EXIT.failure
    this.server = options.server
    this.network = options.network
    this.hint = options.hint
  }
}

export function usageError(message: string, hint?: string): CliError {
  return new CliError(message, { exitCode: EXIT.usage, ...(hint === undefined ? {} : { hint }) })
}

export function signInError(message: string, hint: string, server?: ServerReason): CliError {
  return new CliError(message, { exitCode: EXIT.needsSignIn, hint, ...(server ? { server } : {}) })
}

/**
 * Server-provided text is shown to a person: control characters (terminal
 * escapes) are removed and the length is capped.
 */
export function clean(text: string, max = 500): string {
  // eslint-disable-next-line no-control-regex
  const t = text.replace(/[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]+/g, ' ').trim()
  return t.length > max ? `${t.slice(0, max)}…` : t
}

export interface Paint {
  red(s: string): string
  bold(s: string): string
  dim(s: string): string
  green(s: string): string
  yellow(s: string): string
}

export function createPaint(enabled: boolean): Paint {
  const wrap = (open: number, close: number) => (s: string) => (enabled ? `\u001b[${open}m${s}\u001b[${close}m` : s)
  return { red: wrap(31, 39), bold: wrap(1, 22), dim: wrap(2, 22), green: wrap(32, 39), yellow: wrap(33, 39) }
}

/** The text printed for a failure: the CLI's sentence, then the server's reason and reference, or the host and the failure. */
export function renderError(err: CliError, paint: Paint): string {
  const lines = [`${paint.red('error:')} ${err.message}`]
  const s = err.server
  if (s) {
    const code = s.error ? `${clean(s.error, 60)}, HTTP ${s.status}` : `HTTP ${s.status}`
    lines.push(`  reason: ${s.message ? clean(s.message) : 'the server gave no reason'} (${code})`)
    if (s.where) lines.push(`  where:  ${clean(s.where, 120)}`)
    if (s.ref) lines.push(`  ref:    ${clean(s.ref, 40)}  (quote this reference when reporting the problem)`)
  }
  const n = err.network
  if (n) lines.push(`  no answer from ${n.host}: ${n.failure}`)
  if (err.hint) lines.push(`  ${err.hint}`)
  return lines.join('\n') + '\n'
}

const NETWORK_CODES: Record<string, string> = {
  ENOTFOUND: 'DNS lookup failed (name not found)',
  EAI_AGAIN: 'DNS lookup failed (temporary failure)',
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  EPIPE: 'connection closed',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ETIMEDOUT: 'timed out',
  UND_ERR_CONNECT_TIMEOUT: 'timed out while connecting',
  UND_ERR_HEADERS_TIMEOUT: 'timed out waiting for an answer',
  UND_ERR_BODY_TIMEOUT: 'timed out reading the answer',
  UND_ERR_SOCKET: 'connection closed',
}

/** Names how a fetch got no answer: DNS, refused, TLS, timeout… */
export function describeNetworkFailure(err: unknown): string {
  const seen = new Set<unknown>()
  let e: unknown = err
  while (e && typeof e === 'object' && !seen.has(e)) {
    seen.add(e)
    const o = e as { name?: unknown; code?: unknown; cause?: unknown; errors?: unknown }
    if (o.name === 'TimeoutError') return 'timed out'
    if (o.name === 'AbortError') return 'aborted'
    if (typeof o.code === 'string') {
      const known = NETWORK_CODES[o.code]
      if (known) return `${known} (${o.code})`
      if (/CERT|SSL|TLS|SELF_SIGNED|UNABLE_TO_VERIFY/.test(o.code)) return `TLS failure (${o.code})`
    }
    if (Array.isArray(o.errors) && o.errors.length > 0) {
      e = o.errors[0]
      continue
    }
    e = o.cause
  }
  const code = (err as { code?: unknown } | null)?.code
  if (typeof code === 'string') return `failed (${code})`
  return 'the request failed'
}

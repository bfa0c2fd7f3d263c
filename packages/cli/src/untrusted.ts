import { CliError } from './errors.js'

/**
 * What the server sends is untrusted: the helpers every answer passes through before any
 * of it reaches a terminal, a browser or memory.
 */

// C0 and C1 controls (ESC starts terminal escape sequences), DEL, and the bidirectional
// overrides and isolates that reorder what a terminal shows.
// eslint-disable-next-line no-control-regex
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g

/** A string from the server as a terminal may show it: every control or bidi character becomes U+FFFD. */
export function terminalText(s: string): string {
  return s.replace(UNSAFE, '\ufffd')
}

// as UNSAFE, less the line feed and the tab that a multi-line value is meant to show
// eslint-disable-next-line no-control-regex
const UNSAFE_ON_SCREEN = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g

/**
 * A value as a terminal may show it: every control or bidi character but the line feed and the
 * tab is written out visibly (`\x1b`, `\u202e`), so a value cannot set the clipboard (OSC 52),
 * the window title or clear the screen. `escaped` says whether anything was.
 */
export function visibleText(s: string): { text: string; escaped: boolean } {
  let escaped = false
  const text = s.replace(UNSAFE_ON_SCREEN, (c) => {
    escaped = true
    const code = c.charCodeAt(0)
    return code < 0x100 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`
  })
  return { text, escaped }
}

/** Whether a stream is a terminal. */
export function isTerminal(stream: unknown): boolean {
  return Boolean((stream as { isTTY?: boolean } | null)?.isTTY)
}

/**
 * A parsed JSON answer with every string, keys included, made terminal-safe, so that no
 * command can print a server's escape sequence by forgetting to clean one field. `keep`
 * names top-level fields passed through unchanged (the variables' values of `pull`,
 * which go to files and programs exactly as stored).
 */
export function terminalSafe<T>(value: T, keep: readonly string[] = []): T {
  return walk(value, keep) as T
}

function walk(v: unknown, keep: readonly string[]): unknown {
  if (typeof v === 'string') return terminalText(v)
  if (Array.isArray(v)) return v.map((x) => walk(x, []))
  if (v && typeof v === 'object') {
    const out: Record<string, unknown> = {}
    for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
      out[keep.includes(k) ? k : terminalText(k)] = keep.includes(k) ? x : walk(x, [])
    }
    return out
  }
  return v
}

/** The largest answer the CLI reads: a whole environment (at most its plan's storage, JSON-escaped). */
export const MAX_ANSWER_BYTES = 64 * 1024 * 1024

export class AnswerTooLargeError extends Error {
  readonly host: string
  readonly maxBytes: number
  constructor(host: string, maxBytes: number) {
    super(`the answer from ${host} is larger than ${Math.round(maxBytes / 1024 / 1024)} MiB`)
    this.name = 'AnswerTooLargeError'
    this.host = host
    this.maxBytes = maxBytes
  }
}

/**
 * `fetch` whose answers are at most `maxBytes`: refused at once on a larger Content-Length,
 * else the body stream errors as soon as it passes the bound, so a hostile or broken server
 * cannot make the CLI hold more than that in memory.
 */
export function boundedFetch(inner: typeof fetch, maxBytes = MAX_ANSWER_BYTES): typeof fetch {
  return async function fetchBounded(input, init) {
    const res = await inner(input, init)
    const host = new URL(typeof input === 'string' || input instanceof URL ? input : input.url).host
    const declared = Number(res.headers.get('content-length') ?? NaN)
    if (Number.isFinite(declared) && declared > maxBytes) {
      await res.body?.cancel().catch(() => {})
      throw new AnswerTooLargeError(host, maxBytes)
    }
    if (!res.body) return res
    let seen = 0
    const counted = res.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          seen += chunk.byteLength
          if (seen > maxBytes) controller.error(new AnswerTooLargeError(host, maxBytes))
          else controller.enqueue(chunk)
        },
      }),
    )
    const out = new Response(counted, { status: res.status, statusText: res.statusText, headers: res.headers })
    Object.defineProperty(out, 'url', { value: res.url })
    return out
  } as typeof fetch
}

/** The AnswerTooLargeError somewhere in a thrown error's causes, if any. */
export function tooLargeIn(err: unknown): AnswerTooLargeError | null {
  for (let e = err, i = 0; e && i < 5; e = (e as { cause?: unknown }).cause, i++) {
    if (e instanceof AnswerTooLargeError) return e
  }
  return null
}

/**
 * A URL from the server that the CLI opens or prints as a link: only http(s) on the base
 * URL's own origin (the issuer's). Anything else (`file:`, `javascript:`, another host) is
 * refused with `what` in the error, never opened or shown.
 */
export function sameOriginUrl(raw: unknown, baseUrl: string, what: string): string {
  const origin = new URL(baseUrl).origin
  let url: URL | null = null
  try {
    url = typeof raw === 'string' ? new URL(raw) : null
  } catch {
    url = null
  }
  if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:') || url.origin !== origin || url.username || url.password) {
    throw new CliError(`${what}: the server gave a link that is not on ${origin}; refusing to open or show it`, {
      hint: 'the server may be misconfigured or not the one you meant; check --base-url',
    })
  }
  return url.href
}

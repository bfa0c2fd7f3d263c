/**
 * A .env parser that reads values exactly as the `dotenv` package (v16/17)
 * does, and also accounts for every line: each line is either sent, or
 * refused with its line number and a reason.
 *
 * dotenv's grammar is its one LINE regular expression, reproduced below so
 * that values agree with what an app using dotenv sees: comments, `export `,
 * `NAME=value` and `NAME: value`, single/double/back quotes, multi-line quoted
 * values, `\n` and `\r` expanded inside double quotes (and nothing else:
 * dotenv keeps `\"` and `\\` as written), `#` starting a comment in an
 * unquoted value, the last of duplicate names winning.
 *
 * Where dotenv silently skips or mangles, this parser refuses instead: lines
 * it cannot read, names envkeep does not accept, empty or oversized values,
 * earlier duplicates, and values whose opening quote is never closed (dotenv
 * would keep the stray quote in the value).
 */

// dotenv 17 lib/main.js `LINE`, with the `d` flag for match indices.
const LINE = /(?:^|^)\s*(?:export\s+)?([\w.-]+)(?:\s*=\s*?|:\s+?)(\s*'(?:\\'|[^'])*'|\s*"(?:\\"|[^"])*"|\s*`(?:\\`|[^`])*`|[^#\r\n]+)?\s*(?:#.*)?(?:$|$)/dgm

export const NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*$/
export const MAX_NAME_LENGTH = 256
export const MAX_VALUE_BYTES = 65_536
export const RESERVED_PREFIX = 'ENVKEEP_'
/** The server keeps at most this many refused entries per push. */
export const MAX_REFUSED = 1000

export interface RefusedLine {
  /** 1-based line in the file. */
  readonly line: number
  /** The name on that line, or '' when the line had none that could be read. */
  readonly name: string
  /** Why it was not sent. Never contains the value. */
  readonly reason: string
}

export interface ParsedEntry {
  readonly line: number
  readonly name: string
  readonly value: string
}

export interface ParseResult {
  /** Variables to send, in file order of their (last) line. */
  readonly variables: Record<string, string>
  /** The line each sent variable came from. */
  readonly lines: Record<string, number>
  /** Every line not sent, in line order. */
  readonly refused: RefusedLine[]
}

/** What dotenv does to a matched value. */
function dotenvValue(raw: string | undefined): { value: string; unclosedQuote: boolean } {
  let value = (raw ?? '').trim()
  const maybeQuote = value[0]
  const before = value
  value = value.replace(/^(['"`])([\s\S]*)\1$/gm, '$2')
  if (maybeQuote === '"') value = value.replace(/\\n/g, '\n').replace(/\\r/g, '\r')
  const unclosedQuote = (maybeQuote === '"' || maybeQuote === "'" || maybeQuote === '`') && value === before
  return { value, unclosedQuote }
}

/** Why a name is not sent, or null. */
export function nameReason(name: string): string | null {
  if (name.length > MAX_NAME_LENGTH) return `bad name: longer than ${MAX_NAME_LENGTH} characters`
  if (!NAME_RE.test(name)) return 'bad name: use letters, digits and underscores, not starting with a digit'
  if (name.startsWith(RESERVED_PREFIX)) return `names beginning with ${RESERVED_PREFIX} are envkeep's own settings`
  if (name === '__proto__') return 'bad name: __proto__ is reserved (JavaScript objects cannot hold it as a plain key)'
  return null
}

/** Why a value is not sent, or null. Never repeats the value. */
export function valueReason(value: string): string | null {
  if (value.length === 0) return 'empty value'
  if (Buffer.byteLength(value, 'utf8') > MAX_VALUE_BYTES) return `value over ${MAX_VALUE_BYTES.toLocaleString('en-US')} bytes`
  return null
}

function lineStarts(src: string): number[] {
  const starts = [0]
  for (let i = src.indexOf('\n'); i !== -1; i = src.indexOf('\n', i + 1)) starts.push(i + 1)
  return starts
}

/** 1-based line number of an offset. */
function lineOf(starts: readonly number[], offset: number): number {
  let lo = 0
  let hi = starts.length - 1
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1
    if (starts[mid]! <= offset) lo = mid
    else hi = mid - 1
  }
  return lo + 1
}

/** Reads dotenv entries with their line numbers, plus the lines dotenv would skip. */
export interface ReadEntry extends ParsedEntry {
  readonly unclosedQuote: boolean
  /** First and last line the entry takes (a multi-line value, or blank lines and `export` before it). */
  readonly span: readonly [number, number]
}

export function readEntries(text: string): { entries: ReadEntry[]; unparsed: number[] } {
  const src = text.replace(/\r\n?/g, '\n')
  const starts = lineStarts(src)
  const covered = new Uint8Array(starts.length + 1)
  const entries: ReadEntry[] = []
  LINE.lastIndex = 0
  for (let m = LINE.exec(src); m !== null; m = LINE.exec(src)) {
    if (m[0].length === 0) {
      LINE.lastIndex++
      continue
    }
    const keyAt = m.indices![1]![0]
    const first = lineOf(starts, m.index)
    const last = lineOf(starts, Math.max(m.index, m.index + m[0].length - 1))
    for (let l = first; l <= last; l++) covered[l] = 1
    const { value, unclosedQuote } = dotenvValue(m[2])
    entries.push({ line: lineOf(starts, keyAt), name: m[1]!, value, unclosedQuote, span: [first, last] })
  }
  const unparsed: number[] = []
  for (let l = 1; l <= starts.length; l++) {
    if (covered[l]) continue
    const end = l < starts.length ? starts[l]! - 1 : src.length
    const content = src.slice(starts[l - 1]!, end).trim()
    if (content === '' || content.startsWith('#')) continue
    unparsed.push(l)
  }
  return { entries, unparsed }
}

/**
 * Parses a .env file into what to send and what to refuse. A later line of
 * the same name wins, as in dotenv; the earlier one is refused as a duplicate.
 */
export function parseDotenv(text: string): ParseResult {
  const { entries, unparsed } = readEntries(text)
  const refused: RefusedLine[] = unparsed.map((line) => ({ line, name: '', reason: 'unparseable line: not NAME=value' }))
  const lastLine = new Map<string, number>()
  for (const e of entries) lastLine.set(e.name, e.line)

  const verdict = new Map<number, string | null>()
  for (const e of entries) {
    const r = nameReason(e.name) ?? (e.unclosedQuote ? 'unparseable line: a quote is not closed' : null) ?? valueReason(e.value)
    verdict.set(e.line, r)
  }

  const variables: Record<string, string> = {}
  const lines: Record<string, number> = {}
  for (const e of entries) {
    const own = verdict.get(e.line) ?? null
    const name = e.name.length > MAX_NAME_LENGTH ? e.name.slice(0, MAX_NAME_LENGTH) : e.name
    if (own !== null && own.startsWith('bad name')) {
      refused.push({ line: e.line, name, reason: own })
      continue
    }
    const winner = lastLine.get(e.name)!
    if (winner !== e.line) {
      const w = verdict.get(winner) ?? null
      refused.push({
        line: e.line,
        name,
        reason: w === null ? `duplicate of line ${winner}, which was sent` : `duplicate of line ${winner}, which was not sent either`,
      })
      continue
    }
    if (own !== null) {
      refused.push({ line: e.line, name, reason: own })
      continue
    }
    variables[e.name] = e.value
    lines[e.name] = e.line
  }
  refused.sort((a, b) => a.line - b.line)
  return { variables, lines, refused }
}

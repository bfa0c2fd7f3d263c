import type { Readable, Writable } from 'node:stream'

export const MASK = '*****'

/**
 * A streaming filter that replaces every occurrence of any secret with `*****`, across chunk
 * boundaries: it works on bytes (so a multi-byte character split between two writes is still
 * matched) and holds back only a tail that is the start of some secret, so ordinary output is
 * never delayed.
 */
export class Masker {
  readonly #secrets: Buffer[]
  readonly #byFirst = new Map<number, Buffer[]>()
  #pending: Buffer = Buffer.alloc(0)

  constructor(secrets: readonly string[]) {
    // longest first, so a secret containing another is masked whole
    this.#secrets = [...new Set(secrets.filter((s) => s.length > 0))].map((s) => Buffer.from(s, 'utf8')).sort((a, b) => b.length - a.length)
    for (const s of this.#secrets) {
      const list = this.#byFirst.get(s[0]!) ?? []
      list.push(s)
      this.#byFirst.set(s[0]!, list)
    }
  }

  /** The masked bytes that can be written now. */
  push(chunk: Buffer): Buffer {
    const buf = this.#pending.length ? Buffer.concat([this.#pending, chunk]) : chunk
    const out: Buffer[] = []
    let from = 0
    let i = 0
    while (i < buf.length) {
      const candidates = this.#byFirst.get(buf[i]!)
      let matched = 0
      let partial = false
      if (candidates) {
        for (const s of candidates) {
          const room = buf.length - i
          if (room >= s.length) {
            if (buf.compare(s, 0, s.length, i, i + s.length) === 0) {
              matched = s.length
              break
            }
          } else if (buf.compare(s, 0, room, i, buf.length) === 0) {
            partial = true
          }
        }
      }
      if (matched) {
        out.push(buf.subarray(from, i), Buffer.from(MASK))
        i += matched
        from = i
      } else if (partial) {
        break // the rest may be the start of a secret: hold it
      } else {
        i++
      }
    }
    out.push(buf.subarray(from, i))
    this.#pending = Buffer.from(buf.subarray(i))
    return Buffer.concat(out)
  }

  /** At the end: what is held back is not a secret after all. */
  end(): Buffer {
    const rest = this.#pending
    this.#pending = Buffer.alloc(0)
    return rest
  }
}

/** Pipes `from` to `to` through a Masker; resolves when `from` ends. */
export function pipeMasked(from: Readable, to: Writable, secrets: readonly string[]): Promise<void> {
  const masker = new Masker(secrets)
  return new Promise((resolve) => {
    from.on('data', (chunk: Buffer) => {
      const out = masker.push(chunk)
      if (out.length) to.write(out)
    })
    from.once('end', () => {
      const rest = masker.end()
      if (rest.length) to.write(rest)
      resolve()
    })
    from.once('error', () => resolve())
  })
}

/** Below this many characters a value (or a line of one) is not masked: it would mask ordinary words. */
export const MIN_MASKED = 6

/**
 * What `run --mask` hides: every value of 6 or more characters, and each line of 6 or more
 * characters of a multi-line value (a program that prefixes its output lines, a logger or
 * `sed 's/^/> /'`, prints a PEM key line by line, never the whole).
 */
export function maskedSecrets(values: readonly string[]): string[] {
  const out = new Set<string>()
  for (const v of values) {
    if (v.length >= MIN_MASKED) out.add(v)
    if (!/[\r\n]/.test(v)) continue
    for (const line of v.split(/\r?\n|\r/)) {
      const l = line.trim()
      if (l.length >= MIN_MASKED) out.add(l)
    }
  }
  return [...out]
}

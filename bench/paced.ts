import { connect, type Socket } from 'node:net'

export interface PacedResult {
  /** answered requests per second */
  rps: number
  /** milliseconds, sub-millisecond resolution, measured from when each request was due */
  p50: number
  p99: number
  non2xx: number
  errors: number
  total: number
}

export interface PacedOptions {
  port: number
  method: 'GET' | 'POST'
  path: string
  headers: () => Record<string, string>
  body?: string
  /** requests per second, sent evenly (open loop), not in a burst at the start of each second */
  rate: number
  connections: number
  durationSeconds: number
}

/**
 * An open-loop load at a fixed rate: request i is due at start + i / rate
 * and its latency counts from then, so a slow answer that holds up later
 * requests is charged to them too (no coordinated omission). autocannon's
 * `overallRate` sends each second's quota as fast as it can and then
 * waits, which measures a burst, not a steady rate.
 *
 * The client is as light as the measure needs: one keep-alive socket per
 * connection, each request's bytes written as they are, each answer read by
 * its `content-length`. (node:http's client added tail latency of its own:
 * the bare route measured p99 5 ms at 1,334/s with it.) A request due while
 * every connection is busy waits for the first free one, and its wait counts.
 * Between sends it naps (`napUntilDue`) rather than spins.
 */
export function paced(o: PacedOptions): Promise<PacedResult> {
  const latencies: number[] = []
  let non2xx = 0
  let errors = 0
  let sent = 0
  let done = 0
  const start = performance.now()
  const end = start + o.durationSeconds * 1000
  const interval = 1000 / o.rate
  const total = Math.ceil((end - start) / interval)
  const waiting: number[] = []

  return new Promise((resolve) => {
    let finished = false
    const sockets: Conn[] = []
    const finish = () => {
      if (finished) return
      finished = true
      for (const c of sockets) c.socket.destroy()
      const sorted = latencies.sort((a, b) => a - b)
      const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0
      resolve({ rps: latencies.length / o.durationSeconds, p50: at(0.5), p99: at(0.99), non2xx, errors, total: latencies.length })
    }
    const settle = () => {
      if (++done === total) finish()
    }
    const idle: Conn[] = []
    const send = (c: Conn, due: number) => {
      c.due = due
      c.socket.write(requestBytes(o))
    }
    const free = (c: Conn) => {
      const next = waiting.shift()
      if (next === undefined) idle.push(c)
      else send(c, next)
    }
    for (let i = 0; i < o.connections; i++) {
      const c: Conn = { socket: connect({ host: '127.0.0.1', port: o.port, noDelay: true }), due: 0, buf: Buffer.alloc(0) }
      c.socket.on('data', (chunk: Buffer) => {
        c.buf = c.buf.length === 0 ? chunk : Buffer.concat([c.buf, chunk])
        for (;;) {
          const r = parseAnswer(c.buf)
          if (r === null) return
          c.buf = c.buf.subarray(r.length)
          latencies.push(performance.now() - c.due)
          if (r.status >= 300) non2xx++
          settle()
          free(c)
        }
      })
      c.socket.on('error', () => {
        errors++
      })
      sockets.push(c)
      idle.push(c)
    }
    const tick = () => {
      if (finished) return
      const now = performance.now()
      // request i is due at start + i × interval: those due by now (and before the end) go out
      const dueCount = Math.min(Math.floor((now - start) / interval) + 1, total)
      while (sent < dueCount) {
        const due = start + sent++ * interval
        const c = idle.pop()
        if (c) send(c, due)
        else waiting.push(due)
      }
      if (sent < total) {
        napUntilDue(start + sent * interval - performance.now())
        setImmediate(tick)
      } else setTimeout(finish, 10_000).unref() // answers that never come end the run
    }
    tick()
  })
}

/** Longest nap between two looks at the clock and the sockets (ms); the kernel's wake-up adds to it. */
const NAP_MS = 0.1
const napCell = new Int32Array(new SharedArrayBuffer(4))

/**
 * Sleeps (in the kernel) for up to NAP_MS while the next request is not yet
 * due, instead of spinning on setImmediate: a spinning client holds a whole
 * core, which PostgreSQL's backends (not pinned) then have to share with it.
 * Answers that arrive meanwhile are read at the next turn: a latency is
 * counted up to one nap late (~0.2 ms with the wake-up, measured against a
 * plain node:http server at 1,500/s: p50 0.11 → 0.30 ms), for the bare and
 * the real server alike; the client's CPU there fell from 67–85% to 23–25%.
 */
function napUntilDue(gapMs: number): void {
  if (gapMs > 0.02) Atomics.wait(napCell, 0, 0, Math.min(NAP_MS, gapMs))
}

interface Conn {
  readonly socket: Socket
  due: number
  buf: Buffer
}

/** The request's bytes (headers asked for each request: a case may turn through several tokens). */
function requestBytes(o: PacedOptions): Buffer {
  const body = o.body === undefined ? undefined : Buffer.from(o.body)
  const headers = { host: `127.0.0.1:${o.port}`, ...o.headers(), ...(body ? { 'content-length': String(body.length) } : {}) }
  let head = `${o.method} ${o.path} HTTP/1.1\r\n`
  for (const [k, v] of Object.entries(headers)) head += `${k}: ${v}\r\n`
  head += '\r\n'
  return body ? Buffer.concat([Buffer.from(head), body]) : Buffer.from(head)
}

/** One whole answer at the start of `buf` (its status and length in bytes), or null while it is incomplete. */
function parseAnswer(buf: Buffer): { status: number; length: number } | null {
  const headEnd = buf.indexOf('\r\n\r\n')
  if (headEnd < 0) return null
  const head = buf.toString('latin1', 0, headEnd)
  const m = /\r\ncontent-length: *(\d+)/i.exec(head)
  if (!m) throw new Error('paced: an answer without content-length')
  const length = headEnd + 4 + Number(m[1])
  if (buf.length < length) return null
  return { status: Number(head.slice(9, 12)), length }
}

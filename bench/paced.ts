import { Agent, request } from 'node:http'

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
 */
export function paced(o: PacedOptions): Promise<PacedResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: o.connections })
  const latencies: number[] = []
  let non2xx = 0
  let errors = 0
  let sent = 0
  let inFlight = 0
  const start = performance.now()
  const end = start + o.durationSeconds * 1000
  const interval = 1000 / o.rate

  return new Promise((resolve) => {
    const finish = () => {
      agent.destroy()
      const sorted = latencies.sort((a, b) => a - b)
      const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0
      resolve({ rps: latencies.length / o.durationSeconds, p50: at(0.5), p99: at(0.99), non2xx, errors, total: latencies.length })
    }
    const fire = (due: number) => {
      inFlight++
      const req = request({ host: '127.0.0.1', port: o.port, method: o.method, path: o.path, headers: o.headers(), agent }, (res) => {
        res.resume()
        res.on('end', () => {
          latencies.push(performance.now() - due)
          if ((res.statusCode ?? 0) >= 300) non2xx++
          if (--inFlight === 0 && performance.now() >= end) finish()
        })
      })
      req.on('error', () => {
        errors++
        if (--inFlight === 0 && performance.now() >= end) finish()
      })
      req.end(o.body)
    }
    const tick = () => {
      const now = performance.now()
      // request i is due at start + i × interval: those due by now (and before the end) go out
      const dueCount = Math.min(Math.floor((now - start) / interval) + 1, Math.ceil((end - start) / interval))
      while (sent < dueCount) fire(start + sent++ * interval)
      if (now < end) setImmediate(tick)
      else if (inFlight === 0) finish()
    }
    tick()
  })
}

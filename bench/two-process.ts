/**
 * The two-process cases of `pnpm bench` (issue 20), PostgreSQL only (several processes are
 * allowed on PostgreSQL only, decisions.md):
 *
 * - `read-30-2proc`: a second real server on the same database; the 30-variable read is sent
 *   to both at once, half the connections each. req/s is the sum, CPU per request both
 *   servers' CPU over both servers' requests.
 * - `revoke-propagation`: how long a revocation made through one process takes to reach the
 *   other. 100 tries, each with its own sign-in: a read on B (so B's caches hold the sign-in),
 *   the revocation at A's `/oauth/revoke` (timed from its answer: committed by then), then reads
 *   on B back to back until B answers 401. Prints the max, which issue 20 wants ≤ 1 s.
 */
import type { ChildProcess } from 'node:child_process'
import type { Measure } from './run.js'
import { CLI_CLIENT } from './seed.js'

export interface Server {
  child: ChildProcess
  port: number
}

/** What run.ts measures of one server (a type only: importing it runs nothing). */
export type Measured = Measure

/** Both servers loaded at once with `load` (each its share of connections); the sums. */
export async function loadBoth<C extends { connections: number }>(
  servers: readonly [Server, Server],
  c: C,
  duration: number,
  load: (server: Server, c: C, duration: number) => Promise<Measured>,
): Promise<Measured> {
  const half = Math.max(1, Math.floor(c.connections / 2))
  const [a, b] = await Promise.all(servers.map((s) => load(s, { ...c, connections: half }, duration)))
  const ma = a as Measured
  const mb = b as Measured
  const requests = ma.rps * duration + mb.rps * duration
  return {
    rps: ma.rps + mb.rps,
    // the slower of the two: a fair upper bound without merging histograms
    p50: Math.max(ma.p50, mb.p50),
    p99: Math.max(ma.p99, mb.p99),
    non2xx: ma.non2xx + mb.non2xx,
    errors: ma.errors + mb.errors,
    cpuUs: (ma.cpuUs * ma.rps * duration + mb.cpuUs * mb.rps * duration) / Math.max(1, requests),
  }
}

export interface Propagation {
  tries: number
  maxMs: number
  p50Ms: number
  /** reads B answered between the revocation and its first 401, in all tries */
  staleReads: number
}

/** `tries` revocations at A, each timed until B refuses the token. */
export async function revocationPropagation(a: Server, b: Server, url: string, tokens: readonly string[], tries = 100): Promise<Propagation> {
  if (tokens.length < tries) throw new Error(`bench: revoke-propagation needs ${tries} sign-ins, has ${tokens.length}`)
  const read = (token: string) => fetch(`http://127.0.0.1:${b.port}${url}`, { headers: { authorization: `Bearer ${token}` } })
  const times: number[] = []
  let staleReads = 0
  for (const token of tokens.slice(-tries)) {
    const warm = await read(token)
    await warm.arrayBuffer()
    if (warm.status !== 200) throw new Error(`bench: revoke-propagation: B answered ${warm.status} before the revocation`)
    const revoked = await fetch(`http://127.0.0.1:${a.port}/oauth/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token, client_id: CLI_CLIENT }).toString(),
    })
    await revoked.arrayBuffer()
    const t0 = performance.now()
    if (revoked.status !== 200) throw new Error(`bench: revoke-propagation: A answered ${revoked.status} to the revocation`)
    for (;;) {
      const r = await read(token)
      await r.arrayBuffer()
      if (r.status === 401) break
      if (r.status !== 200) throw new Error(`bench: revoke-propagation: B answered ${r.status}`)
      staleReads++
      if (performance.now() - t0 > 30_000) throw new Error('bench: revoke-propagation: B still reads after 30 s')
    }
    times.push(performance.now() - t0)
  }
  times.sort((x, y) => x - y)
  return { tries, maxMs: times[times.length - 1] as number, p50Ms: times[Math.floor(times.length / 2)] as number, staleReads }
}

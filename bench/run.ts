/**
 * `pnpm bench`: the real envkeep stack against a bare Fastify app answering
 * the same bytes, loaded from this process with autocannon. See README.md.
 *
 * Process tree: this process (seeding, then the load generator, pinned to
 * the last core) → bench/real-server.ts, bench/bare-server.ts and, for the
 * `*-floor` cases, bench/floor-server.ts (pinned to core 0, one loaded at a
 * time). Settings: BENCH_FLOOR=0 (no floor cases), BENCH_DURATION (seconds per
 * case, default 5), BENCH_ONLY (comma-separated case ids), BENCH_PROFILE=1
 * (V8 CPU profile of the real server, in the temp folder), BENCH_NODE_ARGS (extra
 * Node flags for the real server), BENCH_PIN=0 (no CPU pinning), BENCH_RATE
 * (the fixed rate instead of half the measured peak), BENCH_STACK (a folder
 * with another build of the two packages, for before/after),
 * BENCH_SOAK_MINUTES (off by default: a soak of the 30-variable read that
 * samples the heap after warm-up and says whether it stays flat), BENCH_KEEP_DATABASE=1
 * (PostgreSQL: keep the database the run made instead of dropping it).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { availableParallelism, cpus, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import autocannon from 'autocannon'
import { createLocalKeyring } from '@envkeep/env-api-plugin'
import type { BareAnswer } from './bare-server.js'
import { paced } from './paced.js'
import { createPostgresCost, type PostgresCost } from './postgres-cost.js'
import { loadBoth, type Propagation, revocationPropagation } from './two-process.js'
import { BENCH_RATE_LIMIT, MANY_SIGN_INS, MANY_VAULTS, READ_SIZES, seed, value40, varName } from './seed.js'

const here = dirname(fileURLToPath(import.meta.url))
const DURATION = Number(process.env.BENCH_DURATION ?? 5)
const DATABASE = process.env.BENCH_DATABASE === 'postgres' ? 'postgres' : 'sqlite'

async function freshPostgresDatabase(): Promise<string> {
  const server = process.env.BENCH_DATABASE_URL ?? process.env.ENVKEEP_TEST_DATABASE_URL
  if (!server) throw new Error('BENCH_DATABASE=postgres needs BENCH_DATABASE_URL (a server where it may create a database)')
  const { default: pg } = await import('pg')
  const name = `envkeep_bench_${Date.now()}`
  const c = new pg.Client({ connectionString: server })
  await c.connect()
  await c.query(`create database ${name}`)
  await c.end()
  const u = new URL(server)
  u.pathname = `/${name}`
  return u.toString()
}

/** Drops the database freshPostgresDatabase made (BENCH_KEEP_DATABASE=1 keeps it, to look at it). */
async function dropPostgresDatabase(url: string): Promise<void> {
  const server = process.env.BENCH_DATABASE_URL ?? process.env.ENVKEEP_TEST_DATABASE_URL
  if (!server || process.env.BENCH_KEEP_DATABASE) return
  const { default: pg } = await import('pg')
  const c = new pg.Client({ connectionString: server })
  await c.connect()
  try {
    await c.query(`drop database if exists ${new URL(url).pathname.slice(1)} with (force)`)
  } finally {
    await c.end()
  }
}
const SOAK_MINUTES = Number(process.env.BENCH_SOAK_MINUTES ?? 0)
const ONLY = process.env.BENCH_ONLY ? new Set(process.env.BENCH_ONLY.split(',')) : null
const CONNECTIONS = 10
const cores = availableParallelism()
const canPin = cores >= 2 && process.env.BENCH_PIN !== '0' && hasTaskset()

interface Case {
  id: string
  label: string
  method: 'GET' | 'POST'
  url: string
  /** a token, or every sign-in in turn */
  auth: string | string[]
  body?: string
  connections: number
  /** requests per second over all connections, sent evenly (fixed-rate cases, see paced.ts) */
  rate?: number
}

export interface Measure {
  rps: number
  p50: number
  p99: number
  non2xx: number
  errors: number
  /** CPU time the server spent per answered request (user + system), microseconds: robust when the machine is shared */
  cpuUs: number
}

interface CaseResult {
  id: string
  label: string
  connections: number
  rate: number | null
  real: Measure
  bare: Measure
  /** the real server's RSS high-water mark after this case, MB (null for the floor, which is not the real server) */
  realPeakRssMb: number | null
  /** real req/s ÷ bare req/s */
  ratio: number
  /** bare CPU per request ÷ real CPU per request: the ratio the machine would give if it were not shared */
  cpuRatio: number
  /** real CPU per request ÷ bare CPU per request: how many bare requests of CPU one real request costs (issue 20: at most 20 for pushes and lists) */
  cpuTimesBare: number
  /** PostgreSQL only: its backends' CPU and its commits per request (postgres-cost.ts) */
  postgres?: PostgresCost
}

function hasTaskset(): boolean {
  try {
    execFileSync('taskset', ['-p', String(process.pid)], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}

/**
 * Starts a server from bench/dist (plain Node, no TypeScript loader: its memory is the server's own).
 * BENCH_WRAP: a command the real server runs under, e.g. `heaptrack -o /tmp/ht` (where its malloc memory goes).
 */
function startChild(script: string, env: Record<string, string>, nodeArgs: string[] = []): Promise<{ child: ChildProcess; port: number }> {
  const node = [
    ...(process.env.BENCH_WRAP && script === 'real-server.js' ? process.env.BENCH_WRAP.split(' ') : []),
    process.execPath,
    ...nodeArgs,
    join(here, 'dist', script),
  ]
  const [cmd, ...args] = canPin ? ['taskset', '-c', '0', ...node] : node
  const child = spawn(cmd as string, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], env: { ...process.env, ...env } })
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`bench: ${script} exited with ${code}`)))
    child.once('message', (m: { ready?: boolean; port?: number }) => {
      if (m.ready && m.port) resolve({ child, port: m.port })
    })
  })
}

function ask<T>(child: ChildProcess, message: string, key: string): Promise<T> {
  return new Promise((resolve) => {
    const on = (m: Record<string, unknown>) => {
      if (key in m) {
        child.off('message', on)
        resolve(m[key] as T)
      }
    }
    child.on('message', on)
    child.send(message)
  })
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve()
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000)
    child.removeAllListeners('exit')
    child.once('exit', () => {
      clearTimeout(timer)
      resolve()
    })
    child.send('stop')
  })
}

async function load(server: { child: ChildProcess; port: number }, c: Case, duration: number): Promise<Measure> {
  const port = server.port
  const cpu0 = await ask<number>(server.child, 'cpu', 'cpu')
  const tokens = typeof c.auth === 'string' ? [c.auth] : c.auth
  let next = 0
  const headers: Record<string, string> = { authorization: `Bearer ${tokens[0]}` }
  if (c.body !== undefined) headers['content-type'] = 'application/json'
  const request: autocannon.Request = { method: c.method, path: c.url, headers, ...(c.body === undefined ? {} : { body: c.body }) }
  if (c.rate) {
    const p = await paced({
      port,
      method: c.method,
      path: c.url,
      headers: () => ({ ...headers, authorization: `Bearer ${tokens[next++ % tokens.length] as string}` }),
      ...(c.body === undefined ? {} : { body: c.body }),
      rate: c.rate,
      connections: c.connections,
      durationSeconds: duration,
    })
    const cpu1 = await ask<number>(server.child, 'cpu', 'cpu')
    return { cpuUs: (cpu1 - cpu0) / Math.max(1, p.total), rps: p.rps, p50: p.p50, p99: p.p99, non2xx: p.non2xx, errors: p.errors }
  }
  if (tokens.length > 1) {
    request.setupRequest = (req) => {
      const token = tokens[next++ % tokens.length] as string
      return { ...req, headers: { ...headers, authorization: `Bearer ${token}` } }
    }
  }
  const r = await autocannon({
    url: `http://127.0.0.1:${port}`,
    connections: c.connections,
    duration,
    pipelining: 1,
    requests: [request],
  })
  const cpu1 = await ask<number>(server.child, 'cpu', 'cpu')
  return {
    cpuUs: (cpu1 - cpu0) / Math.max(1, r.requests.total),
    rps: r.requests.total / r.duration,
    p50: r.latency.p50,
    p99: r.latency.p99,
    non2xx: r.non2xx,
    errors: r.errors + r.timeouts,
  }
}

async function sample(port: number, c: Case): Promise<BareAnswer> {
  const token = typeof c.auth === 'string' ? c.auth : (c.auth[0] as string)
  const res = await fetch(`http://127.0.0.1:${port}${c.url}`, {
    method: c.method,
    headers: { authorization: `Bearer ${token}`, ...(c.body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(c.body === undefined ? {} : { body: c.body }),
  })
  const body = await res.text()
  const expected = c.method === 'POST' ? 201 : 200
  if (res.status !== expected) throw new Error(`bench: ${c.id} answered ${res.status}, expected ${expected}`)
  return { method: c.method, url: c.url, status: res.status, body }
}

function bodyOf(count: number, valueBytes: number, prefix: string): string {
  const variables: Record<string, string> = {}
  for (let i = 0; i < count; i++)
    variables[varName(prefix, i)] = valueBytes === 40 ? value40() : randomBytes(valueBytes).toString('base64url').slice(0, valueBytes)
  return JSON.stringify({ variables })
}

/** What the real server answers to `stats` (bytes). */
interface ServerStats {
  peakRssBytes: number
  rssBytes: number
  heapUsedBytes: number
  heapTotalBytes: number
  externalBytes: number
}
const mb = (bytes: number): string => (bytes / 1024 / 1024).toFixed(0)

interface SoakResult {
  minutes: number
  /** heap used after a full GC, MB, every 10 s after the warm-up */
  heapMb: number[]
  /** mean of the last three samples minus mean of the first three, MB */
  growthMb: number
  flat: boolean
  rps: number
  cpuUs: number
}

/**
 * The soak: `c` under load for `minutes` (the first tenth, at least 30 s, warms up), the
 * server's heap after a full GC sampled every 10 s. Flat when the last samples exceed the
 * first by at most 10% or 5 MB: a leak of even 1 KB a request shows as tens of MB.
 */
async function runSoak(server: { child: ChildProcess; port: number }, c: Case, minutes: number): Promise<SoakResult> {
  const total = minutes * 60
  const warm = Math.min(total / 2, Math.max(30, total / 10))
  process.stdout.write(`  soak, ${c.id} for ${minutes} min (warm-up ${Math.round(warm)} s)… `)
  await load(server, c, Math.round(warm))
  const heapMb: number[] = []
  let requests = 0
  let cpu = 0
  for (let t = warm; t < total; t += 10) {
    const m = await load(server, c, Math.min(10, total - t))
    requests += m.rps * Math.min(10, total - t)
    cpu += m.cpuUs * m.rps * Math.min(10, total - t)
    heapMb.push((await ask<number>(server.child, 'heap', 'heap')) / 1024 / 1024)
  }
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length)
  const first = mean(heapMb.slice(0, 3))
  const growthMb = mean(heapMb.slice(-3)) - first
  const flat = growthMb <= Math.max(5, first * 0.1)
  process.stdout.write(
    `heap ${heapMb.map((h) => h.toFixed(1)).join(' ')} MB: ${flat ? 'flat' : 'GROWING'} (${growthMb >= 0 ? '+' : ''}${growthMb.toFixed(1)} MB)\n`,
  )
  return {
    minutes,
    heapMb: heapMb.map((h) => Number(h.toFixed(2))),
    growthMb: Number(growthMb.toFixed(2)),
    flat,
    rps: requests / (total - warm),
    cpuUs: cpu / Math.max(1, requests),
  }
}

const fmt = (n: number, d = 0): string => n.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d })
const ms = (n: number): string => (n < 10 ? n.toFixed(2) : n.toFixed(0))
// autocannon reports whole milliseconds; the paced cases measure finer

async function main(): Promise<void> {
  const started = Date.now()
  const dir = mkdtempSync(join(tmpdir(), 'envkeep-bench-'))
  const children: ChildProcess[] = []
  // the PostgreSQL database this run made, dropped at the end
  let made: string | null = null
  try {
    // the servers run compiled (bench/dist), so build the bench project first
    execFileSync(join(here, '..', 'node_modules', '.bin', 'tsc'), ['-b', here], { stdio: 'inherit' })
    if (canPin) execFileSync('taskset', ['-a', '-p', '-c', String(cores - 1), String(process.pid)], { stdio: 'ignore' })
    const masterKey = randomBytes(32)
    // BENCH_DATABASE=postgres: a fresh database on the server in BENCH_DATABASE_URL (else ENVKEEP_TEST_DATABASE_URL)
    const filename = DATABASE === 'postgres' ? await freshPostgresDatabase() : join(dir, 'envkeep.db')
    if (DATABASE === 'postgres') made = filename
    console.log(`database: ${DATABASE}`)
    process.stdout.write('seeding (vaults of 1 … 10,000 variables, a person in 1,000 vaults, 1,002 sign-ins)… ')
    const s = await seed(filename, createLocalKeyring(masterKey))
    process.stdout.write(`${((Date.now() - started) / 1000).toFixed(1)} s\n`)

    const pushPath = `/api/env/${s.pushVault}/development/imports`
    const push30 = bodyOf(30, 40, 'VAR')
    const push1MiB = bodyOf(1000, 1000, 'BIG')
    const all: Case[] = [
      ...READ_SIZES.map((n) => ({
        id: `read-${n}`,
        label: `GET /api/env/:vault/:env, ${fmt(n)} variable${n === 1 ? '' : 's'}`,
        method: 'GET' as const,
        url: `/api/env/${s.readVaults[n]}/development`,
        auth: s.ownerToken,
        connections: CONNECTIONS,
      })),
      {
        id: 'read-10000-c1',
        label: 'GET /api/env/:vault/:env, 10,000 variables, 1 connection',
        method: 'GET',
        url: `/api/env/${s.readVaults[10_000]}/development`,
        auth: s.ownerToken,
        connections: 1,
      },
      {
        id: 'vaults-1000',
        label: `GET /api/env/vaults, person in ${fmt(MANY_VAULTS)} vaults`,
        method: 'GET',
        url: '/api/env/vaults',
        auth: s.manyVaultsToken,
        connections: CONNECTIONS,
      },
      {
        id: 'sign-ins-1000',
        label: `GET 30 variables, ${fmt(MANY_SIGN_INS)} sign-ins round-robin`,
        method: 'GET',
        url: `/api/env/${s.readVaults[30]}/development`,
        auth: s.signInTokens,
        connections: CONNECTIONS,
      },
      { id: 'push-30', label: 'POST …/imports, 30 variables', method: 'POST', url: pushPath, auth: s.ownerToken, body: push30, connections: CONNECTIONS },
      {
        id: 'push-1mib',
        label: `POST …/imports, ${fmt(push1MiB.length)} B body, 1 connection`,
        method: 'POST',
        url: pushPath,
        auth: s.ownerToken,
        body: push1MiB,
        connections: 1,
      },
    ]
    const cases = all.filter((c) => !ONLY || ONLY.has(c.id))
    if (push1MiB.length > 1_048_576) throw new Error('bench: the 1 MiB push is over the limit')

    // BENCH_PROFILE=1: a V8 CPU profile of the real server, kept in the system's temp folder
    const profileDir = join(tmpdir(), 'envkeep-bench-profile')
    const profile = process.env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []
    // envkeep-server's own Node defaults (packages/server/src/node-defaults.ts, e.g. the young
    // generation's size): the real server runs with them, as envkeep-server does.
    // BENCH_NODE_DEFAULTS=node: without them (V8's own sizing, as a host app that sets nothing)
    const defaults = (await import(pathToFileURL(join(here, '..', 'packages', 'server', 'dist', 'node-defaults.js')).href)) as {
      NODE_DEFAULTS: readonly string[]
      missingEnv(env: NodeJS.ProcessEnv): Record<string, string>
    }
    const serverDefaults = process.env.BENCH_NODE_DEFAULTS === 'node' ? [] : defaults.NODE_DEFAULTS
    // and its environment defaults (MALLOC_ARENA_MAX, MALLOC_MMAP_THRESHOLD_), unless this process's environment sets them
    const serverEnv = process.env.BENCH_NODE_DEFAULTS === 'node' ? {} : defaults.missingEnv(process.env)
    profile.push(...serverDefaults)
    const envShown = Object.entries(serverEnv).map(([k, v]) => `${k}=${v}`)
    console.log(
      `real server's Node flags: ${serverDefaults.length > 0 ? `${[...serverDefaults, ...envShown].join(' ')} (envkeep-server's defaults; BENCH_NODE_DEFAULTS=node for none)` : "none (V8's own sizing)"}`,
    )
    // BENCH_NODE_ARGS: extra Node flags for the real server (e.g. GC settings), space-separated; they come after, so they win
    if (process.env.BENCH_NODE_ARGS) profile.push(...process.env.BENCH_NODE_ARGS.split(' ').filter(Boolean))
    if (process.env.BENCH_PROFILE) console.log(`CPU profile of the real server: ${profileDir}`)
    // the soak samples the heap after a full GC (global.gc, only with --expose-gc)
    if (SOAK_MINUTES > 0) profile.push('--expose-gc')
    // what the real server (and a second one) is started with
    const realEnv = { ...serverEnv, BENCH_DB: filename, BENCH_MASTER_KEY: masterKey.toString('base64url') }
    const real = await startChild('real-server.js', realEnv, profile)
    children.push(real.child)
    const startStats = await ask<ServerStats>(real.child, 'stats', 'stats')
    const startRssMb = startStats.rssBytes / 1024 / 1024
    console.log(
      `real server started: RSS ${mb(startStats.rssBytes)} MB, heap ${mb(startStats.heapUsedBytes)} of ${mb(startStats.heapTotalBytes)} MB, external ${mb(startStats.externalBytes)} MB`,
    )
    const answers: BareAnswer[] = []
    for (const c of cases) answers.push(await sample(real.port, c))
    const answersFile = join(dir, 'bare-answers.json')
    writeFileSync(answersFile, JSON.stringify(answers))
    const bare = await startChild('bare-server.js', { BENCH_BARE_ANSWERS: answersFile })
    children.push(bare.child)
    const pgCost = DATABASE === 'postgres' ? await createPostgresCost(filename, canPin ? { pinTo: cores - 1 } : {}) : null
    const onPostgres = async (m: () => Promise<Measure>, duration: number): Promise<{ r: Measure; postgres?: PostgresCost }> => {
      if (!pgCost) return { r: await m() }
      const { result, cost } = await pgCost.measure(m, (r) => r.rps * duration)
      return { r: result, postgres: cost }
    }
    const pgLine = (c?: PostgresCost) => (c ? `; PostgreSQL ${fmt(c.cpuUs)} µs CPU, ${c.commits.toFixed(2)} commits a request` : '')

    // warm both up (JIT, statement caches, data keys) on the headline route
    const warm = cases.find((c) => c.id === 'read-30')
    if (warm) {
      await load(real, warm, 2)
      await load(bare, warm, 2)
    }

    const results: CaseResult[] = []
    const run = async (c: Case): Promise<CaseResult> => {
      process.stdout.write(`  ${c.id}… `)
      const { r, postgres } = await onPostgres(() => load(real, c, DURATION), DURATION)
      const b = await load(bare, c, DURATION)
      const peak = await ask<ServerStats>(real.child, 'stats', 'stats')
      const realPeakRssMb = Number((peak.peakRssBytes / 1024 / 1024).toFixed(1))
      process.stdout.write(
        `${fmt(r.rps)} vs ${fmt(b.rps)} req/s, ${fmt(r.cpuUs)} vs ${fmt(b.cpuUs)} µs CPU a request, peak RSS ${realPeakRssMb.toFixed(0)} MB ` +
          `(now: RSS ${mb(peak.rssBytes)}, heap ${mb(peak.heapUsedBytes)} of ${mb(peak.heapTotalBytes)}, external ${mb(peak.externalBytes)} MB)${pgLine(postgres)}\n`,
      )
      const out = {
        id: c.id,
        label: c.label,
        connections: c.connections,
        rate: c.rate ?? null,
        real: r,
        bare: b,
        realPeakRssMb,
        ratio: r.rps / b.rps,
        cpuRatio: b.cpuUs / r.cpuUs,
        cpuTimesBare: r.cpuUs / b.cpuUs,
        ...(postgres ? { postgres } : {}),
      }
      results.push(out)
      return out
    }
    console.log(
      `load: autocannon, ${DURATION} s per case and server${canPin ? `, servers pinned to core 0, load generator to core ${cores - 1}${pgCost ? " (and the bench database's PostgreSQL backends, before each case)" : ''}` : ' (not pinned)'}`,
    )
    // the floor (floor-server.ts): the least a durable read can do on this machine, against bare in the same run
    const runFloor = async (c: Case, sync: boolean): Promise<void> => {
      const id = `${c.id}-floor${sync ? '' : '-nosync'}`
      const what = c.method === 'GET' ? 'read' : 'push'
      process.stdout.write(`  ${id}… `)
      const floor = await startChild('floor-server.js', {
        BENCH_BARE_ANSWERS: answersFile,
        BENCH_FLOOR_DB: DATABASE === 'postgres' ? filename : join(dir, `${id}.db`),
        BENCH_FLOOR_TOKEN: s.ownerToken,
        BENCH_FLOOR_SYNC: sync ? '1' : '0',
      })
      try {
        await load(floor, c, 2) // warm-up
        const { r, postgres } = await onPostgres(() => load(floor, c, DURATION), DURATION)
        const b = await load(bare, c, DURATION)
        process.stdout.write(`${fmt(r.rps)} vs ${fmt(b.rps)} req/s, ${fmt(r.cpuUs)} vs ${fmt(b.cpuUs)} µs CPU a request${pgLine(postgres)}\n`)
        results.push({
          id,
          label: sync ? `floor: a minimal durable ${what} of 30 (floor-server.ts)` : `floor ${what} without its disk sync (not durable)`,
          connections: c.connections,
          rate: null,
          real: r,
          bare: b,
          realPeakRssMb: null,
          ratio: r.rps / b.rps,
          cpuRatio: b.cpuUs / r.cpuUs,
          cpuTimesBare: r.cpuUs / b.cpuUs,
          ...(postgres ? { postgres } : {}),
        })
      } finally {
        await stop(floor.child)
      }
    }
    for (const c of cases) {
      const r = await run(c)
      if (c.id === 'read-30') {
        // p99 at half of the real stack's peak, the same rate on both
        await run({
          ...c,
          id: 'read-30-half',
          label: 'GET 30 variables at half the peak rate',
          rate: Number(process.env.BENCH_RATE ?? 0) || Math.max(1, Math.round(r.real.rps / 2)),
        })
      }
      // BENCH_FLOOR=0 skips them
      if ((c.id === 'read-30' || c.id === 'push-30') && process.env.BENCH_FLOOR !== '0') for (const sync of [true, false]) await runFloor(c, sync)
    }
    // BENCH_SOAK_MINUTES: the 30-variable read for that long; the heap (after a full GC) sampled
    // every 10 s once warmed up must stay flat (issue 20, item 5: nothing grows without bound)
    const soak = SOAK_MINUTES > 0 ? await runSoak(real, all.find((c) => c.id === 'read-30') as Case, SOAK_MINUTES) : null

    // issue 20: a second server process on the same PostgreSQL database (two-process.ts)
    let propagation: Propagation | null = null
    const wanted = (id: string) => DATABASE === 'postgres' && (!ONLY || ONLY.has(id))
    if (wanted('read-30-2proc') || wanted('revoke-propagation')) {
      const second = await startChild('real-server.js', realEnv, profile)
      children.push(second.child)
      const read30 = all.find((c) => c.id === 'read-30') as Case
      if (wanted('read-30-2proc')) {
        await loadBoth([real, second], read30, 2, load) // warm the second one
        const c = { ...read30, id: 'read-30-2proc', label: 'GET 30 variables, two server processes, half the connections each' }
        process.stdout.write(`  ${c.id}… `)
        const { r, postgres } = await onPostgres(() => loadBoth([real, second], c, DURATION, load), DURATION)
        const b = await load(bare, c, DURATION)
        const peak = await ask<ServerStats>(real.child, 'stats', 'stats')
        process.stdout.write(`${fmt(r.rps)} vs ${fmt(b.rps)} req/s, ${fmt(r.cpuUs)} vs ${fmt(b.cpuUs)} µs CPU a request${pgLine(postgres)}\n`)
        const realPeakRssMb = Number((peak.peakRssBytes / 1024 / 1024).toFixed(1))
        const ratios = { ratio: r.rps / b.rps, cpuRatio: b.cpuUs / r.cpuUs, cpuTimesBare: r.cpuUs / b.cpuUs }
        results.push({
          id: c.id,
          label: c.label,
          connections: c.connections,
          rate: null,
          real: r,
          bare: b,
          realPeakRssMb,
          ...ratios,
          ...(postgres ? { postgres } : {}),
        })
      }
      if (wanted('revoke-propagation')) {
        process.stdout.write('  revoke-propagation… ')
        propagation = await revocationPropagation(real, second, read30.url, s.signInTokens)
        process.stdout.write(`max ${propagation.maxMs.toFixed(1)} ms, p50 ${propagation.p50Ms.toFixed(1)} ms over ${propagation.tries} tries\n`)
      }
    }
    await pgCost?.close()
    const stats = await ask<ServerStats>(real.child, 'stats', 'stats')
    const peakRssMb = stats.peakRssBytes / 1024 / 1024

    // ---- report ------------------------------------------------------------
    const header = ['case', 'conns', 'real req/s', 'p50 ms', 'p99 ms', 'cpu µs', 'bare req/s', 'p50 ms', 'p99 ms', 'cpu µs', 'ratio', 'cpu ratio', 'cpu ×bare']
    const rows = results.map((r) => [
      r.label + (r.rate ? ` (${fmt(r.rate)}/s)` : ''),
      String(r.connections),
      fmt(r.real.rps),
      ms(r.real.p50),
      ms(r.real.p99),
      fmt(r.real.cpuUs),
      fmt(r.bare.rps),
      ms(r.bare.p50),
      ms(r.bare.p99),
      fmt(r.bare.cpuUs),
      r.ratio.toFixed(2),
      r.cpuRatio.toFixed(2),
      r.cpuTimesBare.toFixed(1) + (r.real.non2xx + r.real.errors > 0 ? ` !${r.real.non2xx + r.real.errors} failed` : ''),
    ])
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] as string).length)))
    const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] as number) : c.padStart(widths[i] as number))).join('  ')
    console.log('')
    console.log(line(header))
    console.log(widths.map((w) => '-'.repeat(w)).join('  '))
    for (const row of rows) console.log(line(row))
    console.log('')
    console.log(`peak RSS of the real server: ${peakRssMb.toFixed(0)} MB (${startRssMb.toFixed(0)} MB once started)`)
    console.log(
      `rate limits raised for the run through options: rateLimit ${JSON.stringify(BENCH_RATE_LIMIT)} (defaults 60/minute, 5000/day); ` +
        'plan storage limits raised too (pushes pile up in one vault)',
    )

    const by = (id: string) => results.find((r) => r.id === id)
    // issue 20's targets; the read ratio and the peak RSS differ per database
    const sqlite = DATABASE === 'sqlite'
    const targets = [
      {
        name: `30-variable read ≥ ${sqlite ? '0.5' : '0.25'}× bare (req/s)`,
        value: by('read-30')?.ratio,
        met: (v: number) => v >= (sqlite ? 0.5 : 0.25),
        unit: '×',
      },
      { name: '30-variable read, CPU a request (÷ bare, for reference)', value: by('read-30')?.cpuTimesBare, met: null, unit: '× bare' },
      { name: 'floor: a minimal durable read (floor-server.ts), for reference', value: by('read-30-floor')?.ratio, met: null, unit: '× bare' },
      { name: 'floor read without its disk sync, for reference', value: by('read-30-floor-nosync')?.ratio, met: null, unit: '× bare' },
      { name: 'p99 ≤ 5 ms at half the peak rate', value: by('read-30-half')?.real.p99, met: (v: number) => v <= 5, unit: 'ms' },
      { name: '30-variable push: CPU a request ≤ 20× bare', value: by('push-30')?.cpuTimesBare, met: (v: number) => v <= 20, unit: '× bare' },
      { name: 'floor: a minimal durable push, CPU a request, for reference', value: by('push-30-floor')?.cpuTimesBare, met: null, unit: '× bare' },
      { name: '1,000-vault list: CPU a request ≤ 20× bare', value: by('vaults-1000')?.cpuTimesBare, met: (v: number) => v <= 20, unit: '× bare' },
      ...(sqlite
        ? [{ name: '10,000 variables < 40 ms (p50, 1 connection)', value: by('read-10000-c1')?.real.p50, met: (v: number) => v < 40, unit: 'ms' }]
        : [{ name: '10,000 variables, p50 (1 connection)', value: by('read-10000-c1')?.real.p50, met: null, unit: 'ms' }]),
      { name: '1 MiB push < 150 ms (p50, 1 connection)', value: by('push-1mib')?.real.p50, met: (v: number) => v < 150, unit: 'ms' },
      { name: `peak RSS < ${sqlite ? 150 : 200} MB`, value: peakRssMb, met: (v: number) => v < (sqlite ? 150 : 200), unit: 'MB' },
      ...(soak ? [{ name: 'heap flat through the soak (≤ 10% or 5 MB growth)', value: soak.growthMb, met: () => soak.flat, unit: 'MB' }] : []),
      { name: 'revocation reaches the other process ≤ 1 s (max of 100)', value: propagation?.maxMs, met: (v: number) => v <= 1000, unit: 'ms' },
    ].map((t) => ({ name: t.name, value: t.value ?? null, unit: t.unit, met: t.value === undefined || t.met === null ? null : t.met(t.value) }))
    console.log('targets:')
    for (const t of targets)
      console.log(`  ${t.met === null ? '-   ' : t.met ? 'met ' : 'MISS'} ${t.name}: ${t.value === null ? 'not run' : t.value.toFixed(2) + ' ' + t.unit}`)

    const cpu = cpus()[0]?.model ?? 'unknown'
    const out = {
      date: new Date().toISOString(),
      machine: { cores, cpu, node: process.version, platform: `${process.platform} ${process.arch}` },
      settings: {
        database: DATABASE,
        durationSeconds: DURATION,
        connections: CONNECTIONS,
        pinned: canPin,
        rateLimit: BENCH_RATE_LIMIT,
        tool: 'autocannon (paced.ts for fixed rates)',
        stack: process.env.BENCH_STACK ?? null,
        nodeFlags: profile,
      },
      cases: results,
      server: { peakRssMb: Number(peakRssMb.toFixed(1)), startRssMb: Number(startRssMb.toFixed(1)) },
      soak,
      propagation,
      targets,
      wallSeconds: Math.round((Date.now() - started) / 1000),
    }
    mkdirSync(join(here, 'results'), { recursive: true })
    const file = DATABASE === 'postgres' ? 'latest-postgres.json' : 'latest.json'
    writeFileSync(join(here, 'results', file), JSON.stringify(out, null, 2) + '\n')
    console.log(`written bench/results/${file} (${out.wallSeconds} s in all)`)
  } finally {
    for (const c of children) await stop(c)
    if (made) await dropPostgresDatabase(made)
    rmSync(dir, { recursive: true, force: true })
  }
}

await main()

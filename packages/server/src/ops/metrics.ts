import type { Server } from 'node:http'
import { type EnvApiObserver, nodeHttp, type Storage } from '@envkeep/env-api-plugin'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { sql } from 'kysely'
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client'
import { databaseOf } from './health.js'

// node:http as the plugin loads it (not as an ES import, which loads undici: about 2.3 MB of heap)
const { createServer } = nodeHttp

/**
 * The server's Prometheus metrics. Labels come from fixed sets or route patterns
 * (`/api/env/:vault/:environment`), never from a URL, a vault or variable name, an email or a
 * token: a metric is readable by whoever reaches the metrics listener.
 */
export interface Metrics {
  readonly registry: Registry
  /** the plugin's observer (token checks, API outcomes, webhook deliveries) */
  readonly observer: EnvApiObserver
  /** counts and times every request of the app, by route pattern, method and status */
  instrument(app: FastifyInstance): void
  /** the storage with its access-log writing methods timed */
  timeStorage<S extends Storage>(storage: S): S
  /** the audit stream's outcomes */
  readonly auditStream: { sent(n: number): void; failed(): void; backlog(n: number): void }
}

/** Storage methods that write an access-log entry in their transaction (a read's entry before its values leave). */
const LOGGING_METHODS = new Set(['appendAccessLog', 'createImport', 'decideImport', 'changeVariables', 'createVault', 'changeVault', 'changeMember'])

export function createMetrics(o: { storage: Storage; now: () => Date }): Metrics {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry, prefix: 'envkeep_' })
  const requests = new Counter({
    name: 'envkeep_http_requests_total',
    help: 'HTTP requests answered, by route pattern (never the URL), method and status',
    labelNames: ['route', 'method', 'status'] as const,
    registers: [registry],
  })
  const duration = new Histogram({
    name: 'envkeep_http_request_duration_seconds',
    help: 'Time to answer HTTP requests, by route pattern and method',
    labelNames: ['route', 'method'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  })
  const signIns = new Counter({
    name: 'envkeep_sign_in_checks_total',
    help: 'Sign-in checks: kind token (bearer tokens at /api/env) or password (the sign-in page), by outcome',
    labelNames: ['kind', 'outcome'] as const,
    registers: [registry],
  })
  const operations = new Counter({
    name: 'envkeep_api_operations_total',
    help: 'API operations (list, read, push, push_status) by outcome',
    labelNames: ['operation', 'outcome'] as const,
    registers: [registry],
  })
  const webhooks = new Counter({
    name: 'envkeep_webhook_deliveries_total',
    help: 'Webhook delivery attempts by outcome (delivered, retry, failed)',
    labelNames: ['outcome'] as const,
    registers: [registry],
  })
  const rateLimited = new Counter({
    name: 'envkeep_rate_limit_refusals_total',
    help: 'Requests refused with 429 (API per sign-in or address, sign-in and setup attempts), by route pattern',
    labelNames: ['route'] as const,
    registers: [registry],
  })
  const logWrites = new Histogram({
    name: 'envkeep_access_log_write_seconds',
    help: 'Time of the storage calls that write an access-log entry (in the same transaction), by method',
    labelNames: ['method', 'result'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  })
  const auditSent = new Counter({ name: 'envkeep_audit_stream_sent_total', help: 'Audit stream lines sent', registers: [registry] })
  const auditFailed = new Counter({ name: 'envkeep_audit_stream_failures_total', help: 'Audit stream send attempts that failed', registers: [registry] })
  const auditBacklog = new Gauge({ name: 'envkeep_audit_stream_backlog', help: 'Audit stream lines known not sent yet', registers: [registry] })

  const database = databaseOf(o.storage)
  new Gauge({
    name: 'envkeep_pending_pushes',
    help: 'Pushes waiting for a decision (not past their expiry), across all vaults',
    registers: [registry],
    async collect() {
      if (!database) return
      try {
        const r = await sql`select count(*) as n from imports where status = 'pending' and expires_at > ${o.now().getTime()}`.execute(database.db)
        this.set(Number((r.rows[0] as { n: number | string }).n))
      } catch {}
    },
  })
  type PoolCounts = { totalCount: number; idleCount: number; waitingCount: number }
  const pools = (o.storage as { database?: { pool?: PoolCounts; lazyPool?: PoolCounts } }).database
  const poolGauge = (name: string, help: string, pool: PoolCounts | undefined) => {
    if (!pool) return
    new Gauge({
      name,
      help,
      labelNames: ['state'] as const,
      registers: [registry],
      collect() {
        this.set({ state: 'total' }, pool.totalCount)
        this.set({ state: 'idle' }, pool.idleCount)
        this.set({ state: 'waiting' }, pool.waitingCount)
      },
    })
  }
  poolGauge(
    'envkeep_database_pool_connections',
    'PostgreSQL pool of this process: open connections (total), idle ones, and queries waiting for one (waiting)',
    pools?.pool,
  )
  poolGauge(
    'envkeep_database_counter_pool_connections',
    "PostgreSQL pool of this process's request counters (commits not waiting for the disk): open connections (total), idle ones, waiting queries",
    pools?.lazyPool,
  )

  const observer: EnvApiObserver = {
    tokenCheck: (outcome) => signIns.inc({ kind: 'token', outcome }),
    apiOperation: (operation, outcome) => operations.inc({ operation, outcome }),
    webhookDelivery: (outcome) => webhooks.inc({ outcome }),
  }

  return {
    registry,
    observer,
    instrument(app) {
      app.addHook('onResponse', async function countRequest(request: FastifyRequest, reply: FastifyReply) {
        // unmatched URLs are one label: a scanner's paths never become series
        const route = request.routeOptions.url ?? '(unmatched)'
        const method = /^[A-Z]{3,7}$/.test(request.method) ? request.method : 'OTHER'
        const status = reply.statusCode
        requests.inc({ route, method, status: String(status) })
        duration.observe({ route, method }, reply.elapsedTime / 1000)
        if (status === 429) rateLimited.inc({ route })
        if (request.method === 'POST' && route.endsWith('/login')) {
          const outcome = status === 303 ? 'valid' : status === 401 ? 'invalid' : status === 429 ? 'throttled' : 'refused'
          signIns.inc({ kind: 'password', outcome })
        }
      })
    },
    timeStorage(storage) {
      // methods run with the storage itself as `this` (a class's #private fields need it), each bound once
      const bound = new Map<string | symbol, unknown>()
      return new Proxy(storage, {
        get(target, prop) {
          const value = Reflect.get(target, prop, target)
          if (typeof value !== 'function') return value
          if (bound.has(prop)) return bound.get(prop)
          let fn: unknown = value.bind(target)
          if (typeof prop === 'string' && LOGGING_METHODS.has(prop)) fn = timed(prop, value as (...a: unknown[]) => unknown)
          bound.set(prop, fn)
          return fn
        },
      })
      function timed(prop: string, value: (...a: unknown[]) => unknown) {
        return async function timedCall(...args: unknown[]) {
          const end = logWrites.startTimer({ method: prop })
          try {
            const r = await value.apply(storage, args)
            end({ result: 'ok' })
            return r
          } catch (err) {
            end({ result: 'error' })
            throw err
          }
        }
      }
    },
    auditStream: {
      sent: (n) => auditSent.inc(n),
      failed: () => auditFailed.inc(),
      backlog: (n) => auditBacklog.set(n),
    },
  }
}

/**
 * The metrics listener: `GET /metrics` on its own address (ENVKEEP_METRICS_ADDRESS), never the
 * public port; everything else 404.
 */
export async function serveMetrics(registry: Registry, address: { host: string; port: number }): Promise<Server> {
  const server = createServer(async (req, res) => {
    const path = (req.url ?? '').split('?')[0]
    if (req.method !== 'GET' || path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found; metrics are at /metrics\n')
      return
    }
    try {
      const text = await registry.metrics()
      res.writeHead(200, { 'content-type': registry.contentType, 'cache-control': 'no-store' }).end(text)
    } catch {
      res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('metrics could not be collected\n')
    }
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(address.port, address.host, () => {
      server.off('error', reject)
      resolve()
    })
  })
  return server
}

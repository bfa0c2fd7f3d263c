import t, { type Test } from 'tap'
import parsePrometheusTextFormat from 'parse-prometheus-text-format'
import { withTestDatabase } from '@envkeep/test-support'
import { freePort, newMasterKey, OWNER, seed, signInWithPassword, startServer, stopServer } from './ops-helpers.js'
import { tempDir } from './helpers.js'

type Families = ReturnType<typeof parsePrometheusTextFormat>

/** The value of the sample of `name` whose labels include `labels` (0 when absent). */
function value(families: Families, name: string, labels: Record<string, string> = {}): number {
  const f = families.find((x) => x.name === name)
  const m = f?.metrics.find((s) => Object.entries(labels).every(([k, v]) => s.labels?.[k] === v))
  if (!m) return 0
  return Number(m.value ?? m.count ?? 0)
}

/**
 * A histogram's count for one label set. The parser keeps a histogram's buckets but drops its
 * labels and its _count, so the count is read from the exposition's `_count` line.
 */
function histogramCount(text: string, name: string, labels: Record<string, string>): number {
  for (const line of text.split('\n')) {
    const m = new RegExp(`^${name}_count\\{([^}]*)\\} (\\d+)$`).exec(line)
    if (!m) continue
    const got = Object.fromEntries([...m[1]!.matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]))
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) return Number(m[2])
  }
  return 0
}

t.test('metrics: off by default; on their own listener; counts match a scripted workload; no label holds a name, an email or a token', async (t) => {
  const dir = tempDir(t)
  const port = await freePort()
  const metricsPort = await freePort()
  const base = `http://127.0.0.1:${port}`
  const env = { ENVKEEP_DATA_DIR: dir, ENVKEEP_PORT: String(port), ENVKEEP_MASTER_KEY: newMasterKey() }
  const s = await seed(env, base)

  // off by default: nothing listens on the metrics port
  const off = await startServer(t, env)
  await t.rejects(fetch(`http://127.0.0.1:${metricsPort}/metrics`), 'no metrics listener without ENVKEEP_METRICS_ADDRESS')
  t.equal(await stopServer(off), 0)

  const server = await startServer(t, { ...env, ENVKEEP_METRICS_ADDRESS: `127.0.0.1:${metricsPort}` })
  const api = (path: string, init: RequestInit & { token?: string } = {}) =>
    fetch(`${base}/api/env${path}`, {
      ...init,
      headers: { ...(init.token ? { authorization: `Bearer ${init.token}` } : {}), ...(init.body ? { 'content-type': 'application/json' } : {}) },
    })

  for (let i = 0; i < 3; i++) t.equal((await fetch(`${base}/healthz`)).status, 200)
  for (let i = 0; i < 2; i++) t.equal((await api('/vaults')).status, 401)
  t.equal((await api('/vaults', { token: `ekat_${'Z'.repeat(43)}` })).status, 401)
  t.equal((await api('/vaults', { token: s.token })).status, 200)
  for (let i = 0; i < 4; i++) t.equal((await api(`/${s.vaultId}/development`, { token: s.token })).status, 200)
  t.equal((await api(`/${s.vaultId}/nope`, { token: s.token })).status, 404)
  for (let i = 0; i < 2; i++)
    t.equal(
      (await api(`/${s.vaultId}/development/imports`, { token: s.token, method: 'POST', body: JSON.stringify({ variables: { PUSHED_NAME: `pushed-${i}` } }) }))
        .status,
      201,
    )
  t.equal(await signInWithPassword(base, base, 'not-the-password'), 401, 'a wrong password on the sign-in page')

  t.equal((await fetch(`${base}/metrics`)).status, 404, 'the public port has no /metrics')
  t.equal((await fetch(`http://127.0.0.1:${metricsPort}/other`)).status, 404)
  const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`)
  t.equal(res.status, 200)
  t.match(res.headers.get('content-type'), /^text\/plain/)
  const text = await res.text()
  const families = parsePrometheusTextFormat(text)

  t.equal(value(families, 'envkeep_http_requests_total', { route: '/healthz', method: 'GET', status: '200' }), 3)
  t.equal(value(families, 'envkeep_http_requests_total', { route: '/api/env/vaults', method: 'GET', status: '401' }), 3)
  t.equal(value(families, 'envkeep_http_requests_total', { route: '/api/env/:vault/:environment', method: 'GET', status: '200' }), 4)
  t.equal(value(families, 'envkeep_http_requests_total', { route: '/api/env/:vault/:environment/imports', method: 'POST', status: '201' }), 2)
  t.equal(
    histogramCount(text, 'envkeep_http_request_duration_seconds', { route: '/api/env/:vault/:environment', method: 'GET' }),
    5,
    'latency histogram count (4 reads, 1 not found)',
  )
  t.equal(families.find((f) => f.name === 'envkeep_http_request_duration_seconds')?.type, 'HISTOGRAM')
  t.equal(value(families, 'envkeep_sign_in_checks_total', { kind: 'token', outcome: 'missing' }), 2)
  t.equal(value(families, 'envkeep_sign_in_checks_total', { kind: 'token', outcome: 'invalid' }), 1)
  t.equal(value(families, 'envkeep_sign_in_checks_total', { kind: 'token', outcome: 'valid' }), 8)
  t.equal(value(families, 'envkeep_sign_in_checks_total', { kind: 'password', outcome: 'invalid' }), 1)
  t.equal(value(families, 'envkeep_api_operations_total', { operation: 'read', outcome: 'ok' }), 4)
  t.equal(value(families, 'envkeep_api_operations_total', { operation: 'read', outcome: 'not_found' }), 1)
  t.equal(value(families, 'envkeep_api_operations_total', { operation: 'push', outcome: 'ok' }), 2)
  t.equal(value(families, 'envkeep_api_operations_total', { operation: 'list', outcome: 'unauthorized' }), 3)
  t.equal(value(families, 'envkeep_pending_pushes'), 2)
  t.equal(
    histogramCount(text, 'envkeep_access_log_write_seconds', { method: 'appendAccessLog', result: 'ok' }),
    4,
    'one timed log write per read (the domain reads, then appends its entry before the values leave)',
  )
  t.equal(histogramCount(text, 'envkeep_access_log_write_seconds', { method: 'createImport', result: 'ok' }), 2)
  t.ok(value(families, 'envkeep_process_resident_memory_bytes') > 0, 'process memory')
  t.ok(families.some((f) => f.name === 'envkeep_webhook_deliveries_total'))
  t.ok(families.some((f) => f.name === 'envkeep_rate_limit_refusals_total'))

  for (const secret of [s.vaultId, 'app', OWNER, s.token, 'SEEDED_NAME', 'PUSHED_NAME', 'seeded-value', 'pushed-0']) {
    const labelValues = families.flatMap((f) => f.metrics.flatMap((m) => Object.values(m.labels ?? {})))
    t.notOk(
      labelValues.some((v) => v === secret || v.includes(secret.length > 8 ? secret : `/${secret}`)),
      `no label holds ${secret.slice(0, 12)}`,
    )
  }
  t.equal(await stopServer(server), 0)
})

/** A seeded installation served with metrics on, and `extra` settings. */
async function seededWithMetrics(t: Test, extra: Record<string, string>) {
  const port = await freePort()
  const metricsPort = await freePort()
  const base = `http://127.0.0.1:${port}`
  const env = {
    ENVKEEP_DATA_DIR: tempDir(t),
    ENVKEEP_PORT: String(port),
    ENVKEEP_MASTER_KEY: newMasterKey(),
    ENVKEEP_METRICS_ADDRESS: `127.0.0.1:${metricsPort}`,
    ...extra,
  }
  const s = await seed(env, base)
  return { base, metricsPort, s, server: await startServer(t, env) }
}

t.test('rate-limit refusals are counted by route', async (t) => {
  const { base, metricsPort, s, server } = await seededWithMetrics(t, { ENVKEEP_RATE_PER_MINUTE: '2' })
  const statuses: number[] = []
  for (let i = 0; i < 5; i++) statuses.push((await fetch(`${base}/api/env/vaults`, { headers: { authorization: `Bearer ${s.token}` } })).status)
  t.same(statuses, [200, 200, 429, 429, 429])
  const families = parsePrometheusTextFormat(await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text())
  t.equal(value(families, 'envkeep_rate_limit_refusals_total', { route: '/api/env/vaults' }), 3)
  t.equal(value(families, 'envkeep_api_operations_total', { operation: 'list', outcome: 'rate_limited' }), 3)
  t.equal(await stopServer(server), 0)
})

t.test('on PostgreSQL: the pool is shown, and pending pushes are counted there', async (t) => {
  const url = await withTestDatabase(t)
  if (!url) {
    t.comment('ENVKEEP_TEST_DATABASE_URL is not set: skipped')
    return
  }
  const { base, metricsPort, s, server } = await seededWithMetrics(t, { ENVKEEP_DATABASE_URL: url, ENVKEEP_DATABASE_POOL: '3' })
  const push = await fetch(`${base}/api/env/${s.vaultId}/development/imports`, {
    method: 'POST',
    headers: { authorization: `Bearer ${s.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ variables: { ONE: 'x' } }),
  })
  t.equal(push.status, 201)
  // the sign-in page's attempt limits live in the database here, reached through the timed storage
  t.equal(await signInWithPassword(base, base, 'not-the-password'), 401)
  const families = parsePrometheusTextFormat(await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text())
  t.equal(value(families, 'envkeep_pending_pushes'), 1)
  t.equal(value(families, 'envkeep_sign_in_checks_total', { kind: 'password', outcome: 'invalid' }), 1)
  const total = value(families, 'envkeep_database_pool_connections', { state: 'total' })
  t.ok(total >= 1 && total <= 3, `pool connections ${total} of 3`)
  const states = families.find((f) => f.name === 'envkeep_database_pool_connections')?.metrics.map((m) => m.labels?.state)
  t.same(states, ['total', 'idle', 'waiting'])
  // the request counters' own pool (two connections), used by the push's rate limit above
  const counters = value(families, 'envkeep_database_counter_pool_connections', { state: 'total' })
  t.ok(counters >= 1 && counters <= 2, `counter pool connections ${counters} of 2`)
  t.equal(await stopServer(server), 0)
})

import t from 'tap'
import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createLocalKeyring } from '@envkeep/env-api-plugin'
import { spawnNode } from '@envkeep/test-support'
import { sql } from 'kysely'
import { databaseOf } from '../src/ops/health.js'
import { buildTestApp, freePort, runCli } from './helpers.js'

const BIN = fileURLToPath(new URL('../dist/bin.js', import.meta.url))
const PG_SCRIPT = fileURLToPath(new URL('../../../.ci/postgres.sh', import.meta.url))
const key = () => new Uint8Array(randomBytes(32))

t.test('healthz answers without a key; readyz says why not ready; neither is logged per request', async (t) => {
  const noKey = await buildTestApp(t)
  const h = await noKey.app.inject({ method: 'GET', url: '/healthz' })
  t.equal(h.statusCode, 200)
  t.equal(h.headers['cache-control'], 'no-store, private')
  t.same(h.json(), { status: 'ok' })
  const r = await noKey.app.inject({ method: 'GET', url: '/readyz' })
  t.equal(r.statusCode, 503)
  t.match(r.json(), { status: 'not ready', reason: /no master key/ })
  t.notOk(noKey.log.text.includes('/healthz') || noKey.log.text.includes('/readyz'), 'no request line for the probes')

  const withKey = await buildTestApp(t, { keyring: createLocalKeyring(key()) })
  const ready = await withKey.app.inject({ method: 'GET', url: '/readyz' })
  t.equal(ready.statusCode, 200, ready.body)
  t.same(ready.json(), { status: 'ready' })
  // many probes in a row are never rate limited
  for (let i = 0; i < 30; i++) t.equal((await withKey.app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200)
  const post = await withKey.app.inject({ method: 'POST', url: '/healthz' })
  t.not(post.statusCode, 200)
})

t.test('a base URL with a path serves the probes at the root and under the path', async (t) => {
  const a = await buildTestApp(t, { env: { ENVKEEP_BASE_URL: 'https://example.com/envkeep' }, keyring: createLocalKeyring(key()) })
  t.equal((await a.app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200)
  t.equal((await a.app.inject({ method: 'GET', url: '/envkeep/healthz' })).statusCode, 200)
  t.equal((await a.app.inject({ method: 'GET', url: '/envkeep/readyz' })).statusCode, 200)
})

function pg(args: string[]): string {
  return execFileSync('bash', [PG_SCRIPT, ...args], { encoding: 'utf8' }).trim()
}

/** Starts the same throw-away cluster again (same data, same port), as postgres.sh does minus initdb. */
function restartCluster(dir: string, port: number): void {
  const bindir = execFileSync('bash', ['-c', 'ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1'], { encoding: 'utf8' }).trim()
  const args = ['-D', join(dir, 'data'), '-w', '-l', join(dir, 'log'), '-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1`, 'start']
  if (process.getuid?.() === 0) execFileSync('runuser', ['-u', 'postgres', '--', join(bindir, 'pg_ctl'), ...args], { stdio: 'ignore' })
  else execFileSync(join(bindir, 'pg_ctl'), args, { stdio: 'ignore' })
}

async function statusOf(url: string): Promise<number> {
  try {
    return (await fetch(url, { signal: AbortSignal.timeout(3000) })).status
  } catch {
    return 0
  }
}

/** Polls until `url` answers `status`; fails after `withinMs` (the issue's own bound). */
async function until(url: string, status: number, withinMs: number): Promise<boolean> {
  const end = Date.now() + withinMs
  while (Date.now() < end) {
    if ((await statusOf(url)) === status) return true
    await new Promise((r) => setTimeout(r, 100))
  }
  return false
}

const hasPostgres = (() => {
  try {
    return execFileSync('bash', ['-c', 'ls -d /usr/lib/postgresql/*/bin'], { encoding: 'utf8' }).trim() !== ''
  } catch {
    return false
  }
})()

t.test(
  'PostgreSQL killed under a running server: readyz 503 within 5 s, healthz 200, both recover',
  { skip: hasPostgres ? false : 'no PostgreSQL server binaries (apt postgresql)' },
  async (t) => {
    const pgDir = mkdtempSync(join(tmpdir(), 'envkeep-pg-'))
    t.teardown(() => {
      try {
        pg(['stop', pgDir])
      } catch {}
      rmSync(pgDir, { recursive: true, force: true })
    })
    const url = pg(['start', pgDir])
    const pgPort = Number(new URL(url).port)
    const dataDir = mkdtempSync(join(tmpdir(), 'envkeep-health-'))
    t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
    const port = await freePort()
    const base = `http://127.0.0.1:${port}`
    const env = {
      ENVKEEP_PORT: String(port),
      ENVKEEP_DATA_DIR: dataDir,
      ENVKEEP_DATABASE_URL: url,
      ENVKEEP_MASTER_KEY: Buffer.from(key()).toString('base64url'),
    }
    const server = spawnNode(BIN, ['start'], { env })
    t.teardown(() => {
      if (server.child.exitCode === null) server.child.kill('SIGKILL')
    })
    await server.waitFor('stdout', /envkeep-server started/)
    t.equal(await statusOf(`${base}/readyz`), 200)
    t.equal((await runCli(['healthcheck', '--url', `${base}/readyz`], {})).code, 0)
    t.equal((await runCli(['healthcheck'], env)).code, 0, 'the default URL is this host and port')

    pg(['stop', pgDir])
    t.ok(await until(`${base}/readyz`, 503, 5000), 'readyz turns 503 within 5 s')
    const body = await (await fetch(`${base}/readyz`)).json()
    t.match(body, { status: 'not ready', reason: /database/ })
    t.notMatch(JSON.stringify(body), /127\.0\.0\.1|ECONNREFUSED|postgres:/, 'no internal detail')
    t.equal(await statusOf(`${base}/healthz`), 200, 'healthz stays 200')
    const down = await runCli(['healthcheck', '--url', `${base}/readyz`], {})
    t.equal(down.code, 1)
    t.match(down.stderr, /answered 503: the database/)

    restartCluster(pgDir, pgPort)
    t.ok(await until(`${base}/readyz`, 200, 15000), 'readyz is 200 again once PostgreSQL is back, without a restart')
    t.equal(await statusOf(`${base}/healthz`), 200)
    t.equal((await runCli(['healthcheck', '--url', `${base}/readyz`], {})).code, 0)
    t.notOk(/\/readyz|\/healthz/.test(server.stdout()), 'the probes are not logged per request')

    server.child.kill('SIGTERM')
    t.equal((await server.done).code, 0)
  },
)

t.test('healthcheck: nothing listening → exit 1 with a sentence; a bad URL → exit 2', async (t) => {
  const port = await freePort()
  const r = await runCli(['healthcheck', '--url', `http://127.0.0.1:${port}/readyz`], {})
  t.equal(r.code, 1)
  t.match(r.stderr, /cannot be reached/)
  t.equal((await runCli(['healthcheck', '--url', 'ftp://x'], {})).code, 2)
})

t.test('readyz: a schema migrated further since start (a newer version ran) makes the process not ready', async (t) => {
  const a = await buildTestApp(t, { keyring: createLocalKeyring(key()) })
  t.equal((await a.app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200)
  const database = databaseOf(a.storage)
  if (!database) throw new Error('a SQL storage was expected')
  const table = database.kind === 'sqlite' ? 'kysely_migration' : 'envkeep_storage_migration'
  await sql`insert into ${sql.id(table)} (name, timestamp) values ('999_from_a_newer_version', ${new Date().toISOString()})`.execute(database.db)
  const r = await a.app.inject({ method: 'GET', url: '/readyz' })
  t.equal(r.statusCode, 503)
  t.match(r.json(), { reason: /migrated by a newer envkeep-server/ })
  t.equal((await a.app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200)
})

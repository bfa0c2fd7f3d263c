import t from 'tap'
import { once } from 'node:events'
import { readFileSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { spawnNode, withTestDatabase } from '@envkeep/test-support'
import { loadConfig, SETTINGS, UsageError } from '../src/config.js'
import { effectiveSettings, unknownSettings } from '../src/ops/settings.js'
import { freePort, tempDir } from './helpers.js'

const BIN = fileURLToPath(new URL('../dist/bin.js', import.meta.url))
const KNOWN = SETTINGS.map((s) => s.env)

t.test('secret settings from files: read, trailing newline dropped; both set, unreadable or empty → a usage error without the content', async (t) => {
  const dir = tempDir(t)
  writeFileSync(join(dir, 'db'), 'postgres://u:canary-db-password@db.example:5432/envkeep\n')
  writeFileSync(join(dir, 'smtp'), 'smtp://u:canary-smtp-password@mail.example:587')
  writeFileSync(join(dir, 'empty'), '\n')
  const c = loadConfig(
    {},
    { ENVKEEP_DATA_DIR: dir, ENVKEEP_DATABASE_URL_FILE: 'db', ENVKEEP_SMTP_URL_FILE: join(dir, 'smtp'), ENVKEEP_SMTP_FROM: 'envkeep@example.com' },
    dir,
  )
  t.equal(c.databaseUrl, 'postgres://u:canary-db-password@db.example:5432/envkeep', 'relative to the working directory')
  t.equal(c.smtp?.url, 'smtp://u:canary-smtp-password@mail.example:587')
  t.throws(() => loadConfig({}, { ENVKEEP_DATABASE_URL: 'postgres://x/y', ENVKEEP_DATABASE_URL_FILE: 'db' }, dir), {
    name: 'UsageError',
    message: 'set ENVKEEP_DATABASE_URL or ENVKEEP_DATABASE_URL_FILE, not both',
  })
  t.throws(() => loadConfig({}, { ENVKEEP_DATABASE_URL_FILE: 'missing' }, dir), /ENVKEEP_DATABASE_URL_FILE: cannot read missing \(ENOENT\)/)
  t.throws(() => loadConfig({}, { ENVKEEP_DATABASE_URL_FILE: 'empty' }, dir), /is empty/)
  try {
    loadConfig({}, { ENVKEEP_DATABASE_URL_FILE: 'smtp' }, dir)
    t.fail('a wrong URL from a file is refused')
  } catch (err) {
    t.ok(err instanceof UsageError)
    t.notMatch((err as Error).message, /canary/, 'the error never repeats the content')
  }
  // the OIDC client secret and the audit stream's secret have their _FILE form too
  const env = { ENVKEEP_OIDC_CLIENT_SECRET_FILE: join(dir, 'smtp') }
  t.same(unknownSettings(env, KNOWN), [], 'a _FILE form of a secret setting is known')
})

t.test('unknown ENVKEEP_ names are warned about with the closest known name; the CLI and tests names are not', async (t) => {
  const w = unknownSettings(
    {
      ENVKEEP_DATABSE_URL: 'x',
      ENVKEEP_PROT: '1',
      ENVKEEP_SOMETHING_ELSE_ENTIRELY: '1',
      ENVKEEP_PORT: '1',
      ENVKEEP_CONFIG_DIR: '/x',
      ENVKEEP_TEST_DATABASE_URL: 'x',
      HOME: '/root',
    },
    KNOWN,
  )
  t.same(w, [
    'ENVKEEP_DATABSE_URL is not a setting of envkeep-server; did you mean ENVKEEP_DATABASE_URL?',
    'ENVKEEP_PROT is not a setting of envkeep-server; did you mean ENVKEEP_PORT?',
    'ENVKEEP_SOMETHING_ELSE_ENTIRELY is not a setting of envkeep-server',
  ])
})

t.test('effective settings: secrets redacted (URLs keep the host), files named', async (t) => {
  const raw = { ENVKEEP_DATABASE_URL_FILE: '/run/secrets/db', ENVKEEP_MASTER_KEY: 'A'.repeat(43), ENVKEEP_PORT: '8080' }
  const out = effectiveSettings(raw, { ...raw, ENVKEEP_DATABASE_URL: 'postgres://u:canary-pw@db.example/envkeep?password=canary2' }, KNOWN)
  t.same(out, {
    ENVKEEP_PORT: '8080',
    ENVKEEP_DATABASE_URL: 'postgres://u:redacted@db.example/envkeep?redacted (from /run/secrets/db)',
    ENVKEEP_MASTER_KEY: '[redacted]',
  })
})

t.test('ENVKEEP_SHUTDOWN_GRACE and ENVKEEP_METRICS_ADDRESS are checked', async (t) => {
  const dir = tempDir(t)
  t.equal(loadConfig({}, {}, dir).shutdownGraceSeconds, 10)
  t.equal(loadConfig({}, { ENVKEEP_SHUTDOWN_GRACE: '3' }, dir).shutdownGraceSeconds, 3)
  t.throws(() => loadConfig({}, { ENVKEEP_SHUTDOWN_GRACE: '0' }, dir), /ENVKEEP_SHUTDOWN_GRACE/)
  t.equal(loadConfig({}, {}, dir).metricsAddress, null)
  t.same(loadConfig({}, { ENVKEEP_METRICS_ADDRESS: '127.0.0.1:9464' }, dir).metricsAddress, { host: '127.0.0.1', port: 9464 })
  t.same(loadConfig({}, { ENVKEEP_METRICS_ADDRESS: '[::1]:9464' }, dir).metricsAddress, { host: '::1', port: 9464 })
  t.throws(() => loadConfig({}, { ENVKEEP_METRICS_ADDRESS: '9464' }, dir), /host:port/)
})

t.test('start: the database URL from a file, settings printed redacted, a typo warned, core dumps off, SIGTERM exits 0', async (t) => {
  const url = await withTestDatabase(t)
  if (!url) {
    t.comment('ENVKEEP_TEST_DATABASE_URL is not set: skipped')
    return
  }
  const dir = tempDir(t)
  // the shared test server needs no password: one in the URL is ignored by trust authentication
  const withPassword = new URL(url)
  withPassword.password = 'canary-file-password'
  writeFileSync(join(dir, 'db.url'), `${withPassword}\n`)
  const port = await freePort()
  const server = spawnNode(BIN, ['start'], {
    cwd: dir,
    env: {
      ENVKEEP_PORT: String(port),
      ENVKEEP_DATABASE_URL_FILE: 'db.url',
      ENVKEEP_MASTER_KEY: Buffer.alloc(32, 7).toString('base64url'),
      ENVKEEP_RATE_PER_MINUT: '5',
    },
  })
  t.teardown(() => {
    if (server.child.exitCode === null) server.child.kill('SIGKILL')
  })
  await server.waitFor('stdout', /envkeep-server started/)
  const out = server.stdout()
  t.notMatch(out, /canary-file-password/, 'the password never reaches the log')
  t.notMatch(out, new RegExp(Buffer.alloc(32, 7).toString('base64url')), 'nor the key')
  t.match(out, /"ENVKEEP_DATABASE_URL":"postgres:\/\/[^"]*redacted@127\.0\.0\.1[^"]* \(from db\.url\)"/)
  t.match(out, /ENVKEEP_RATE_PER_MINUT is not a setting of envkeep-server; did you mean ENVKEEP_RATE_PER_MINUTE\?/)
  const limits = readFileSync(`/proc/${server.child.pid}/limits`, 'utf8')
  t.match(limits, /Max core file size\s+0\s+0\s/, 'RLIMIT_CORE is 0, soft and hard')
  t.equal(readFileSync(`/proc/${server.child.pid}/coredump_filter`, 'utf8').trim(), '00000000')
  t.equal((await fetch(`http://127.0.0.1:${port}/readyz`)).status, 200)
  server.child.kill('SIGTERM')
  const done = await server.done
  t.equal(done.code, 0)
  t.match(done.stdout, /envkeep-server stopped; database closed/)
})

t.test('shutdown: a request still in flight after ENVKEEP_SHUTDOWN_GRACE does not hold the server; it stops with exit 1', async (t) => {
  const dir = tempDir(t)
  const port = await freePort()
  const server = spawnNode(BIN, ['start'], {
    cwd: dir,
    env: { ENVKEEP_PORT: String(port), ENVKEEP_SHUTDOWN_GRACE: '1', ENVKEEP_MASTER_KEY: Buffer.alloc(32, 9).toString('base64url') },
  })
  t.teardown(() => {
    if (server.child.exitCode === null) server.child.kill('SIGKILL')
  })
  await server.waitFor('stdout', /envkeep-server started/)
  // a request whose body never finishes arriving
  const socket = connect(port, '127.0.0.1')
  await once(socket, 'connect')
  socket.write('POST /login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\nemail=')
  t.teardown(() => socket.destroy())
  await new Promise((r) => setTimeout(r, 200)) // the server has read the headers (nothing to await on the client side)
  server.child.kill('SIGTERM')
  const done = await server.done
  t.equal(done.code, 1)
  t.match(done.stdout, /requests still in flight after the grace period/)
  t.match(done.stdout, /"graceSeconds":1/)
})

import t from 'tap'
import { existsSync, readFileSync, rmSync, statSync } from 'node:fs'
import { createServer, connect } from 'node:net'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { spawnNode } from '@envkeep/test-support'
import { freePort, tempDir } from './helpers.js'

const BIN = fileURLToPath(new URL('../dist/bin.js', import.meta.url))
const PASSWORD = 'canary-process-password-9876'
const BEARER = `ekat_${'C'.repeat(43)}`
const QUERY_CANARY = 'canary-in-a-query-string'

function run(args: string[], cwd: string, env: Record<string, string>) {
  const r = spawnNode(BIN, args, { env, cwd })
  return { ...r, exited: r.done.then((d) => d.code) }
}

function cookiesOf(res: Response): Record<string, string> {
  const out: Record<string, string> = {}
  for (const c of res.headers.getSetCookie()) {
    const [pair] = c.split(';')
    const i = pair!.indexOf('=')
    out[pair!.slice(0, i)] = pair!.slice(i + 1)
  }
  return out
}
const cookieHeader = (jar: Record<string, string>) =>
  Object.entries(jar)
    .map(([k, v]) => `${k}=${v}`)
    .join('; ')
const csrfOf = (body: string) => /name="_csrf" value="([^"]+)"/.exec(body)![1]!

t.test('first run, setup, sign-in, SIGTERM with a request in flight, restart without a key', async (t) => {
  const dir = tempDir(t)
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const server = run(['start'], dir, { ENVKEEP_PORT: String(port) })
  t.teardown(() => {
    if (server.child.exitCode === null) server.child.kill('SIGKILL')
  })
  await server.waitFor('stdout', /envkeep-server started/)
  const [, token] = await server.waitFor('stderr', /\/setup\?token=([A-Za-z0-9_-]{43})/)

  // first-run files: ./.envkeep with the database and a 0600 key, logged once with a backup warning
  const data = join(dir, '.envkeep')
  t.equal(statSync(data).mode & 0o777, 0o700)
  t.equal(statSync(join(data, 'master.key')).mode & 0o777, 0o600)
  t.ok(existsSync(join(data, 'envkeep.db')))
  t.equal(server.stdout().match(/master key created; back it up/g)?.length, 1, 'backup warning logged once')
  t.ok(server.stderr().includes(`${base}/setup?token=`), 'the link uses the base URL')

  // setup: the link works once
  const jar: Record<string, string> = {}
  const get = async (path: string) => {
    const res = await fetch(base + path, { headers: { cookie: cookieHeader(jar) }, redirect: 'manual' })
    Object.assign(jar, cookiesOf(res))
    return { res, body: await res.text() }
  }
  const post = async (path: string, form: Record<string, string>) => {
    const res = await fetch(base + path, {
      method: 'POST',
      headers: { cookie: cookieHeader(jar), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form).toString(),
      redirect: 'manual',
    })
    Object.assign(jar, cookiesOf(res))
    return { res, body: await res.text() }
  }
  const setup = await get(`/setup?token=${token}`)
  t.equal(setup.res.status, 200)
  const created = await post('/setup', {
    _csrf: csrfOf(setup.body),
    token: token!,
    email: 'owner@example.com',
    name: 'Owner',
    password: PASSWORD,
    password2: PASSWORD,
  })
  t.equal(created.res.status, 303)
  const session = jar.envkeep_session!
  t.ok(session)
  t.equal((await get(`/setup?token=${token}`)).res.status, 404, 'used link refused')

  // sign out, sign in again (wrong password first)
  const logoutPage = await get('/logout')
  t.equal((await post('/logout', { _csrf: csrfOf(logoutPage.body) })).res.status, 303)
  const login = await get(`/login?return_to=/${QUERY_CANARY}`)
  t.equal((await post('/login', { _csrf: csrfOf(login.body), email: 'owner@example.com', password: `${PASSWORD}-wrong` })).res.status, 401)
  t.equal((await post('/login', { _csrf: csrfOf(login.body), email: 'owner@example.com', password: PASSWORD })).res.status, 303)
  const vaults = await get('/')
  t.equal(vaults.res.status, 200, 'the vault list answers a signed-in person')

  // the API without a valid token: 401, and the bearer never reaches the log
  const api = await fetch(`${base}/api/env/vaults`, { headers: { authorization: `Bearer ${BEARER}` } })
  t.equal(api.status, 401)

  // SIGTERM while a request is in flight: it still gets its answer
  const socket = connect(port, '127.0.0.1')
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()))
  const body = `email=a%40example.com&password=${PASSWORD}`
  socket.write(
    `POST /logout HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`,
  )
  let answer = ''
  socket.on('data', (d: Buffer) => (answer += d.toString('utf8')))
  const socketClosed = new Promise<void>((resolve) => socket.once('close', () => resolve()))
  // the server has the request (headers read) once it logged it: the second POST /logout
  await server.waitFor('stdout', /"method":"POST","path":"\/logout"[\s\S]*"method":"POST","path":"\/logout"/)
  server.child.kill('SIGTERM')
  await server.waitFor('stdout', /shutting down/)
  socket.write(body.slice(10))
  await socketClosed
  t.match(answer, /^HTTP\/1\.1 403 /, 'the in-flight request was answered (403: no CSRF token)')
  t.equal(await server.exited, 0, 'exit 0 after SIGTERM')
  t.match(server.stdout(), /database closed/)
  t.notOk(existsSync(join(data, 'envkeep.db-wal')), 'database closed cleanly (WAL checkpointed and removed)')

  // the log: JSON lines, no password, token, cookie, bearer, query or key
  const log = server.stdout()
  for (const line of log.trim().split('\n')) t.doesNotThrow(() => JSON.parse(line), 'a JSON line')
  const key = readFileSync(join(data, 'master.key'), 'utf8').trim()
  for (const [label, canary] of [
    ['password', PASSWORD],
    ['setup token', token!],
    ['session cookie', session],
    ['bearer token', BEARER],
    ['query string', QUERY_CANARY],
    ['master key', key],
  ] as const)
    t.notOk(log.includes(canary), `log holds no ${label}`)
  t.notOk(server.stderr().includes(PASSWORD) || server.stderr().includes(key), 'stderr holds no password or key')

  // restart on the existing directory without its key: no key is made, pages still work
  rmSync(join(data, 'master.key'))
  const again = run(['start', '--port', String(port)], dir, {})
  t.teardown(() => {
    if (again.child.exitCode === null) again.child.kill('SIGKILL')
  })
  await again.waitFor('stdout', /envkeep-server started/)
  t.notOk(existsSync(join(data, 'master.key')), 'start never makes a key on an existing data directory')
  t.match(again.stdout(), /no master key/)
  t.notOk(again.stderr().includes('/setup?token='), 'no setup link once an account exists')
  t.equal((await fetch(`${base}/login`)).status, 200)
  again.child.kill('SIGINT')
  t.equal(await again.exited, 0, 'exit 0 after SIGINT')
})

t.test('a bad setting: exit 2 before anything starts', async (t) => {
  const dir = tempDir(t)
  const r = run(['start'], dir, { ENVKEEP_PLANS: '{nope', ENVKEEP_PORT: String(await freePort()) })
  t.equal(await r.exited, 2)
  t.match(r.stderr(), /ENVKEEP_PLANS must be JSON/)
  t.equal(r.stdout(), '')
  t.notOk(existsSync(join(dir, '.envkeep')))
})

t.test('a port in use: exit 1 with the reason', async (t) => {
  const dir = tempDir(t)
  const blocker = createServer()
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', () => resolve()))
  t.teardown(() => blocker.close())
  const port = (blocker.address() as { port: number }).port
  const r = run(['start', '--port', String(port)], dir, {})
  t.equal(await r.exited, 1)
  t.match(r.stderr(), /EADDRINUSE/)
})

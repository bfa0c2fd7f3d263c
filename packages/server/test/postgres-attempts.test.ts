import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { freePort, spawnNode, withTestDatabase, type Spawned } from '@envkeep/test-support'
import { runCli, tempDir } from './helpers.js'
import { hiddenFields, httpBrowser } from './http-flows.js'

// Issue 25: sign-in, setup, invitation and OAuth attempt limits lived in one process: two
// servers on one PostgreSQL allowed twice the guesses, and the per-account back-off did not
// cross. Two real `start` processes, one database, everything tried from outside.

t.setTimeout(240_000)

const BIN = fileURLToPath(new URL('../dist/bin.js', import.meta.url))
const PASSWORD = 'canary-attempts-password'

t.test('two envkeep-server processes on one PostgreSQL count sign-in and OAuth attempts together', async (t) => {
  const url = await withTestDatabase(t)
  if (!url) return
  const dir = tempDir(t)
  const [p1, p2] = [await freePort(), await freePort()]
  const base = `http://127.0.0.1:${p1}`
  const env = {
    ENVKEEP_DATA_DIR: join(dir, 'data'),
    ENVKEEP_DATABASE_URL: url,
    ENVKEEP_BASE_URL: base,
    ENVKEEP_DATABASE_POOL: '4',
    ENVKEEP_RATE_PER_MINUTE: '4',
  }
  t.equal((await runCli(['init'], env, '', dir)).code, 0)
  t.equal((await runCli(['admin', 'user', 'create', '--email', 'ana@example.com', '--name', 'Ana', '--password-stdin'], env, `${PASSWORD}\n`, dir)).code, 0)
  const servers: Spawned[] = []
  t.teardown(() => {
    for (const s of servers) if (s.child.exitCode === null) s.child.kill('SIGKILL')
  })
  for (const port of [p1, p2]) {
    const s = spawnNode(BIN, ['start', '--port', String(port)], { env, cwd: dir })
    servers.push(s)
    await s.waitFor('stdout', /envkeep-server started/)
  }
  const at = (port: number) => `http://127.0.0.1:${port}`

  const browser = httpBrowser(base)
  const login = async (port: number, email: string, password: string) => {
    const page = await browser.get(`${at(port)}/login`)
    const res = await browser.post(`${at(port)}/login`, { _csrf: hiddenFields(page.html)._csrf!, email, password })
    return { status: res.status, body: await res.text() }
  }

  // the per-account back-off: five wrong passwords through one process hold the sixth try on the other
  for (let i = 0; i < 5; i++) t.equal((await login(p1, 'ana@example.com', `wrong-${i}`)).status, 401, `wrong password ${i + 1} on the first process`)
  const held = await login(p2, 'ana@example.com', PASSWORD)
  t.equal(held.status, 429, 'the other process holds the next try, even with the right password')
  t.match(held.body, /too many wrong passwords for this email/)

  // the per-address limit (10 a minute): 6 tries so far; 4 more through the first, the 11th on the second
  for (let i = 0; i < 4; i++) t.equal((await login(p1, `someone-${i}@example.com`, 'wrong')).status, 401, `try ${7 + i}`)
  const limited = await login(p2, 'bob@example.com', 'wrong')
  t.equal(limited.status, 429, 'the 11th try from this address is refused by the other process')
  t.match(limited.body, /too many attempts from this address/)

  // setup shares the sign-in count: refused on either process now
  const setupPage = await browser.get(`${at(p1)}/login`)
  const setup = await browser.post(`${at(p1)}/setup`, {
    _csrf: hiddenFields(setupPage.html)._csrf!,
    token: 'x'.repeat(43),
    email: 'x@example.com',
    name: 'X',
    password: 'wrong',
  })
  t.equal(setup.status, 429, 'setup attempts count with sign-in attempts')

  // invitation links (10 a minute): guesses through both processes count together
  const guess = async (port: number, i: number) => {
    const page = await browser.get(`${at(port)}/login`)
    const token = `${'g'.repeat(40)}${String(i).padStart(3, '0')}`
    return (await browser.post(`${at(port)}/invite/${token}`, { _csrf: hiddenFields(page.html)._csrf!, name: 'X', password: 'a long enough password' })).status
  }
  for (let i = 0; i < 10; i++) t.not(await guess(i % 2 ? p2 : p1, i), 429, `invitation guess ${i + 1}, alternating processes`)
  t.equal(await guess(p2, 10), 429, 'the 11th invitation guess in a minute is refused')

  // the OAuth endpoints (4 a minute here): counted together too
  const token = (port: number) =>
    fetch(`${at(port)}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'grant_type=refresh_token' })
  for (let i = 0; i < 4; i++) t.equal((await token(i % 2 ? p2 : p1)).status, 400, `OAuth request ${i + 1}, alternating processes`)
  const refused = await token(p1)
  t.equal(refused.status, 429, 'the 5th OAuth request in a minute is refused')
  t.equal(((await refused.json()) as { error: string }).error, 'rate_limited')
})

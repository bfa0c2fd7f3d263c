import { createServer, type Server } from 'node:http'
import t, { type Test } from 'tap'
import { chromium } from 'playwright-core'
import { testLogEntry } from '@envkeep/env-api-plugin/testing'
import { CHROMIUM_LAUNCH, freePort } from '@envkeep/test-support'
import { addAccount, buildTestApp, setCookies, type TestApp } from './helpers.js'

// Issue 25, found by outside tests, item 1: session tossing where `__Host-` cannot be used.
// Over http, a page on another port of the same host plants its own session cookie with
// `Path=/v`; after the victim signs in, the browser sends both to `/v/...` (the longer path
// first), and the server used the attacker's. Now a request with the session (or CSRF)
// cookie name twice is signed out, and every copy is expired.

const VICTIM_PASSWORD = 'canary-victim-password-toss'
const ATTACKER_PASSWORD = 'canary-attacker-password-toss'

async function vault(s: TestApp, ownerId: string, name: string): Promise<string> {
  const vaultId = crypto.randomUUID()
  await s.storage.createVault(
    { id: vaultId, name, ownerId, plan: 'self-hosted', environments: [{ name: 'development', ownersOnly: false }], now: new Date(s.clock.ms) },
    testLogEntry({ vaultId, action: 'vault_created' }),
  )
  return vaultId
}

/** The attacker's session token: what signing in to their own account gives them. */
async function sessionOf(s: TestApp, email: string, password: string): Promise<string> {
  const login = await s.app.inject({ method: 'GET', url: '/login' })
  const csrf = /name="_csrf" value="([^"]+)"/.exec(login.body)![1]!
  const res = await s.app.inject({
    method: 'POST',
    url: '/login',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `envkeep_csrf=${setCookies(login).envkeep_csrf}` },
    payload: new URLSearchParams({ _csrf: csrf, email, password, return_to: '/' }).toString(),
  })
  return setCookies(res).envkeep_session!
}

async function setUp(t: Test) {
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const s = await buildTestApp(t, { env: { ENVKEEP_BASE_URL: base } })
  await s.app.listen({ host: '127.0.0.1', port })
  const victim = await addAccount(s.accounts, 'victim@example.com', VICTIM_PASSWORD, 'Vera Victim')
  const attacker = await addAccount(s.accounts, 'mallory@example.com', ATTACKER_PASSWORD, 'Mallory')
  const victimVault = await vault(s, victim.id, 'payroll')
  const attackerVault = await vault(s, attacker.id, 'trap')
  return { ...s, base, victim, attacker, victimVault, attackerVault, attackerSession: await sessionOf(s, 'mallory@example.com', ATTACKER_PASSWORD) }
}

t.test('in Chromium: a session cookie planted with Path=/v by a page on another port is never used, and is cleared', async (t) => {
  const s = await setUp(t)
  const planted = `envkeep_session=${s.attackerSession}; path=/v`
  const server: Server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
    res.end(`<!doctype html><html><body><script>document.cookie = ${JSON.stringify(planted)}</script><p id="done">planted</p></body></html>`)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  const browser = await chromium.launch(CHROMIUM_LAUNCH)
  t.teardown(() => browser.close())
  const page = await (await browser.newContext()).newPage()

  await page.goto(`http://127.0.0.1:${(server.address() as { port: number }).port}/`)
  await page.locator('#done').waitFor()
  // the victim signs in as usual
  await page.goto(`${s.base}/login`)
  await page.getByLabel('Email').fill('victim@example.com')
  await page.getByLabel('Password').fill(VICTIM_PASSWORD)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.waitForURL(`${s.base}/`)
  // the browser now sends both cookies to /v/...: signed out, not the attacker's account
  await page.goto(`${s.base}/v/${s.attackerVault}`)
  t.match(new URL(page.url()).pathname, '/login', 'treated as signed out')
  t.notMatch(await page.content(), 'trap', "the attacker's vault is not shown")
  const left = (await page.context().cookies(s.base)).filter((c) => c.name === 'envkeep_session')
  t.same(left, [], 'every copy of the session cookie was expired, the planted one included')
  // signing in again works, in the victim's own account
  await page.getByLabel('Email').fill('victim@example.com')
  await page.getByLabel('Password').fill(VICTIM_PASSWORD)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.goto(`${s.base}/v/${s.victimVault}`)
  t.equal(new URL(page.url()).pathname, `/v/${s.victimVault}`)
  t.match(await page.content(), 'Vera Victim')
  t.match(s.log.text, 'cookie name sent more than once')
  t.notOk(s.log.text.includes(s.attackerSession), 'no session token in the log')
})

t.test('a CSRF or session cookie name sent twice: signed out, each path variant expired', async (t) => {
  const s = await setUp(t)
  const victimSession = await sessionOf(s, 'victim@example.com', VICTIM_PASSWORD)
  const get = (cookie: string, url = `/v/${s.victimVault}/members`) => s.app.inject({ method: 'GET', url, headers: { cookie } })
  const alone = await get(`envkeep_session=${victimSession}`)
  t.equal(alone.statusCode, 200, 'one session cookie: signed in')
  for (const cookie of [
    `envkeep_session=${s.attackerSession}; envkeep_session=${victimSession}`,
    `envkeep_session=${victimSession}; envkeep_session=${victimSession}`,
    `envkeep_session=${victimSession}; envkeep_csrf=planted-secret; envkeep_csrf=another`,
  ]) {
    const res = await get(cookie)
    t.equal(res.statusCode, 303, 'treated as signed out')
    t.match(res.headers.location, /^\/login\?/)
    const expired = (res.cookies as { name: string; path?: string; expires?: Date }[]).filter((c) => c.expires && c.expires.getTime() <= Date.now())
    for (const name of ['envkeep_session', 'envkeep_csrf'])
      for (const path of ['/', '/v', '/v/', `/v/${s.victimVault}`, `/v/${s.victimVault}/members`])
        t.ok(
          expired.some((c) => c.name === name && c.path === path),
          `${name} expired at ${path}`,
        )
  }
})

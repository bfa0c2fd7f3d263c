import { createServer, type Server } from 'node:http'
import t, { type Test } from 'tap'
import { chromium, type Browser } from 'playwright-core'
import { testLogEntry } from '@envkeep/env-api-plugin/testing'
import { CHROMIUM_LAUNCH, freePort } from '@envkeep/test-support'
import { addAccount, buildTestApp, csrfOf, setCookies } from './helpers.js'

// Hardening 1, from outside: a page on another port of the same host is "same-site" with
// envkeep. It can plant cookies for the host (cookie tossing) and auto-submit forms. With a
// CSRF secret that is a plain cookie, a token the attacker minted for their own secret went
// through: the attacker became owner of a vault through a signed-in owner's browser, or
// signed the victim's browser in to the attacker's account (login CSRF).

const OWNER_PASSWORD = 'canary-owner-password-csrf'
const ATTACKER_PASSWORD = 'canary-attacker-password-csrf'

/** The attacker's page on another port: plants `cookie`, then auto-submits `fields` to `action`. */
async function attackerSite(t: Test, action: string, cookie: string, fields: Record<string, string>): Promise<string> {
  const inputs = Object.entries(fields)
    .map(([k, v]) => `<input type="hidden" name="${k}" value="${v}">`)
    .join('')
  const page = `<!doctype html><html><body><form id="f" method="post" action="${action}">${inputs}</form>
<script>document.cookie = ${JSON.stringify(cookie)}; document.getElementById('f').submit()</script></body></html>`
  const server: Server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
    res.end(page)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  return `http://127.0.0.1:${(server.address() as { port: number }).port}/`
}

async function setUp(t: Test) {
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const built = await buildTestApp(t, { env: { ENVKEEP_BASE_URL: base } })
  await built.app.listen({ host: '127.0.0.1', port })
  const owner = await addAccount(built.accounts, 'owner@example.com', OWNER_PASSWORD, 'Olga Owner')
  const attacker = await addAccount(built.accounts, 'mallory@example.com', ATTACKER_PASSWORD, 'Mallory')
  const vaultId = crypto.randomUUID()
  await built.storage.createVault(
    { id: vaultId, name: 'shop', ownerId: owner.id, plan: 'self-hosted', environments: [{ name: 'production', ownersOnly: true }], now: new Date() },
    testLogEntry({ vaultId, action: 'vault_created' }),
  )
  // what the attacker gets by visiting envkeep themselves: a CSRF secret cookie and a token for it
  const login = await built.app.inject({ method: 'GET', url: '/login' })
  const secret = Object.entries(setCookies(login)).find(([k]) => k.endsWith('envkeep_csrf'))![1]
  const token = csrfOf(login.body)
  const browser: Browser = await chromium.launch(CHROMIUM_LAUNCH)
  t.teardown(() => browser.close())
  const context = await browser.newContext()
  const page = await context.newPage()
  return { ...built, base, owner, attacker, vaultId, secret, token, context, page }
}

t.test('a page on another port plants a CSRF cookie and posts "add member as owner": refused, nobody added', async (t) => {
  const s = await setUp(t)
  // the victim, an owner, signs in as usual
  await s.page.goto(`${s.base}/login`)
  await s.page.getByLabel('Email').fill('owner@example.com')
  await s.page.getByLabel('Password').fill(OWNER_PASSWORD)
  await s.page.getByRole('button', { name: 'Sign in' }).click()
  await s.page.waitForURL(`${s.base}/`)

  const evil = await attackerSite(t, `${s.base}/v/${s.vaultId}/members/add`, `envkeep_csrf=${s.secret}; path=/v/${s.vaultId}/members`, {
    _csrf: s.token,
    email: 'mallory@example.com',
    role: 'owner',
  })
  const answer = s.page.waitForResponse((r) => r.url().startsWith(`${s.base}/v/`) && r.request().method() === 'POST')
  await s.page.goto(evil)
  const res = await answer
  t.equal(res.status(), 403, 'the tossed form is refused')
  const members = await s.storage.listMembers(s.vaultId)
  t.same(
    members.map((m) => m.personId),
    [s.owner.id],
    'the attacker did not become a member',
  )
  t.notOk(s.log.text.includes(s.token), 'the token is not logged')
})

t.test("a page on another port plants a CSRF cookie and posts the attacker's login: refused, the browser stays signed out", async (t) => {
  const s = await setUp(t)
  const evil = await attackerSite(t, `${s.base}/login`, `envkeep_csrf=${s.secret}; path=/login`, {
    _csrf: s.token,
    email: 'mallory@example.com',
    password: ATTACKER_PASSWORD,
    return_to: '/',
  })
  const answer = s.page.waitForResponse((r) => r.url() === `${s.base}/login` && r.request().method() === 'POST')
  await s.page.goto(evil)
  const res = await answer
  t.equal(res.status(), 403, 'login CSRF is refused')
  const cookies = await s.context.cookies(s.base)
  t.notOk(
    cookies.some((c) => c.name.endsWith('envkeep_session')),
    "no session was started in the victim's browser",
  )
})

t.test("a token is bound to the session: one minted for another browser's secret does not pass, even same-origin", async (t) => {
  const s = await setUp(t)
  // signed in over inject: a session cookie, and the attacker's (secret, token) pair in its place
  const login = await s.app.inject({ method: 'GET', url: '/login' })
  const mine = setCookies(login)
  const signIn = await s.app.inject({
    method: 'POST',
    url: '/login',
    headers: {
      cookie: Object.entries(mine)
        .map(([k, v]) => `${k}=${v}`)
        .join('; '),
      'content-type': 'application/x-www-form-urlencoded',
    },
    payload: new URLSearchParams({ _csrf: csrfOf(login.body), email: 'owner@example.com', password: OWNER_PASSWORD }).toString(),
  })
  t.equal(signIn.statusCode, 303)
  const session = Object.entries(setCookies(signIn)).find(([k]) => k.endsWith('envkeep_session'))!
  const post = (secret: string, token: string) =>
    s.app.inject({
      method: 'POST',
      url: `/v/${s.vaultId}/members/add`,
      headers: { cookie: `${session[0]}=${session[1]}; envkeep_csrf=${secret}`, 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ _csrf: token, email: 'mallory@example.com', role: 'owner' }).toString(),
    })
  t.equal((await post(s.secret, s.token)).statusCode, 403, "the attacker's pre-session token")
  t.same(
    (await s.storage.listMembers(s.vaultId)).map((m) => m.personId),
    [s.owner.id],
  )
  // the same request with the page's own token works: the refusal above was the binding
  const vaultPage = await s.app.inject({ method: 'GET', url: `/v/${s.vaultId}`, headers: { cookie: `${session[0]}=${session[1]}; envkeep_csrf=${s.secret}` } })
  const ok = await post(s.secret, csrfOf(vaultPage.body))
  // (issue 25: an account is invited, never added at once)
  t.equal(ok.statusCode, 200)
  t.equal((await s.accounts.listInvitations(s.vaultId, new Date())).length, 1)
})

t.test('a fresh session id at every sign-in: a session planted before sign-in ends', async (t) => {
  const s = await setUp(t)
  // the attacker signs in and plants their session cookie in the victim's browser
  const mine = await s.app.inject({ method: 'GET', url: '/login' })
  const jar = setCookies(mine)
  const signIn = await s.app.inject({
    method: 'POST',
    url: '/login',
    headers: {
      cookie: Object.entries(jar)
        .map(([k, v]) => `${k}=${v}`)
        .join('; '),
      'content-type': 'application/x-www-form-urlencoded',
    },
    payload: new URLSearchParams({ _csrf: csrfOf(mine.body), email: 'mallory@example.com', password: ATTACKER_PASSWORD }).toString(),
  })
  const planted = Object.entries(setCookies(signIn)).find(([k]) => k.endsWith('envkeep_session'))![1]
  await s.context.addCookies([{ name: 'envkeep_session', value: planted, url: s.base }])
  await s.page.goto(`${s.base}/login`)
  await s.page.getByLabel('Email').fill('owner@example.com')
  await s.page.getByLabel('Password').fill(OWNER_PASSWORD)
  await s.page.getByRole('button', { name: 'Sign in' }).click()
  await s.page.waitForURL(`${s.base}/`)
  const now = (await s.context.cookies(s.base)).find((c) => c.name === 'envkeep_session')!.value
  t.not(now, planted, 'the browser got a new session id')
  const old = await s.app.inject({ method: 'GET', url: '/', headers: { cookie: `envkeep_session=${planted}` } })
  t.equal(old.statusCode, 303, 'the planted session no longer signs anyone in')
})

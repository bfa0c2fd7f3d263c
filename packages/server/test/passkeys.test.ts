import t from 'tap'
import { chromium, type Browser } from 'playwright-core'
import { CHROMIUM_LAUNCH, freePort } from '@envkeep/test-support'
import { hashToken } from '../src/secrets.js'
import { addAccount, browser, buildTestApp, csrfOf } from './helpers.js'

// Issue 22, item 2: passkeys, in Chromium with a virtual authenticator (DevTools WebAuthn):
// added and named on /account, used alone (a discoverable credential), and as the second
// step after a password; the page's script is a static asset under the strict CSP.
// SQLite here; PostgreSQL with ENVKEEP_TEST_STORAGE=postgres.

const PASSWORD = 'canary-passkey-password-7'

t.test('a passkey: added on /account, signs in alone, and serves as the second step after a password', async (t) => {
  const port = await freePort()
  // WebAuthn refuses an IP address as relying party: localhost
  const base = `http://localhost:${port}`
  const s = await buildTestApp(t, { env: { ENVKEEP_BASE_URL: base } })
  await s.app.listen({ host: '127.0.0.1', port })
  const ana = await addAccount(s.accounts, 'ana@example.com', PASSWORD, 'Ana')

  const browser: Browser = await chromium.launch({
    ...CHROMIUM_LAUNCH,
    args: [...(CHROMIUM_LAUNCH.args ?? []), '--host-resolver-rules=MAP localhost 127.0.0.1'],
  })
  t.teardown(() => browser.close())
  const context = await browser.newContext()
  const page = await context.newPage()
  const problems: string[] = []
  page.on('console', (m) => {
    if (m.type() === 'error' || /Content Security Policy|Refused to/i.test(m.text())) problems.push(m.text())
  })
  page.on('pageerror', (e) => problems.push(String(e)))
  const cdp = await context.newCDPSession(page)
  await cdp.send('WebAuthn.enable')
  await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true },
  })

  async function password(): Promise<void> {
    await page.goto(`${base}/login`)
    await page.getByLabel('Email').fill('ana@example.com')
    await page.getByLabel('Password').fill(PASSWORD)
    await page.getByRole('button', { name: 'Sign in', exact: true }).click()
  }

  // add and name a passkey
  await password()
  await page.waitForURL(`${base}/`)
  await page.goto(`${base}/account`)
  await page.getByRole('link', { name: 'Add a passkey' }).click()
  await page.getByLabel('Name').fill('Work laptop')
  await page.getByRole('button', { name: 'Add a passkey' }).click()
  await page.waitForURL(`${base}/account?done=passkey_added`)
  t.match(await page.content(), 'The passkey was added')
  t.match(await page.content(), '>Work laptop</td>')
  const [factor] = await s.accounts.listFactors(ana.id)
  t.equal(factor?.kind, 'passkey')
  t.ok(factor?.publicKey && factor.credentialId, 'its public key and credential id are stored')

  // sign in with the passkey alone: no email typed
  await context.clearCookies()
  await page.goto(`${base}/login`)
  await page.getByRole('link', { name: 'Sign in with a passkey' }).click()
  await page.getByRole('button', { name: 'Sign in with a passkey' }).click()
  await page.waitForURL(`${base}/`)
  t.match(await page.content(), 'Ana', 'signed in as Ana')

  // a password now needs the second step; the passkey serves
  await context.clearCookies()
  await password()
  await page.waitForURL(`${base}/login/second-factor`)
  await page.getByRole('button', { name: 'Use a passkey' }).click()
  await page.waitForURL(`${base}/`)
  t.match(await page.content(), 'Ana')

  const events = (await s.accounts.listSigninEvents(50)).map((e) => `${e.event}:${e.detail}`)
  for (const e of ['factor_added:passkey', 'signin_succeeded:passkey', 'signin_succeeded:password+passkey']) t.ok(events.includes(e), e)
  t.ok((await s.accounts.listFactors(ana.id))[0]!.counter >= 0)
  t.same(problems, [], 'no CSP violation or script error')

  // a replayed assertion (the same form sent twice) does not sign in: each challenge works once
  await context.clearCookies()
  await page.goto(`${base}/login/passkey`)
  const sent = page.waitForRequest((r) => r.method() === 'POST' && r.url() === `${base}/login/passkey`)
  await page.getByRole('button', { name: 'Sign in with a passkey' }).click()
  const body = (await sent).postData() ?? ''
  await page.waitForURL(`${base}/`)
  const replay = await s.app.inject({
    method: 'POST',
    url: '/login/passkey',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      cookie: (await context.cookies(base)).map((c) => `${c.name}=${c.value}`).join('; '),
      origin: base,
    },
    payload: body,
  })
  t.not(replay.statusCode, 303, 'the same assertion again: refused')
})

t.test('the last way to sign in cannot be removed: with password sign-in off and no SSO link, the last passkey stays', async (t) => {
  const s = await buildTestApp(t, {
    env: {
      ENVKEEP_OIDC_ISSUER: 'https://idp.invalid',
      ENVKEEP_OIDC_CLIENT_ID: 'envkeep',
      ENVKEEP_OIDC_ALLOWED_DOMAINS: 'example.com',
      ENVKEEP_PASSWORD_LOGIN: 'false',
    },
  })
  const ana = await addAccount(s.accounts, 'ana@example.com', PASSWORD, 'Ana')
  await s.accounts.addFactor({ id: 'pk1', accountId: ana.id, kind: 'passkey', name: 'Laptop', credentialId: 'cred-1', publicKey: 'cGs' }, new Date(s.clock.ms))
  // in by the break-glass link (the password no longer signs in)
  const token = 'L'.repeat(43)
  await s.accounts.createLoginLink(hashToken(token), ana.id, new Date(s.clock.ms), new Date(s.clock.ms + 60_000))
  const b = browser(s.app)
  const confirm = await b.get(`/login/link/${token}`)
  t.equal((await b.post(`/login/link/${token}`, { _csrf: csrfOf(confirm.body) })).statusCode, 303)
  const account = await b.get('/account')
  const removed = await b.post('/account/factors/remove', { _csrf: csrfOf(account.body), factor: 'pk1' })
  t.equal(removed.statusCode, 409)
  t.match(removed.body, 'this passkey is your last way to sign in')
  t.equal((await s.accounts.listFactors(ana.id)).length, 1)
  t.equal((await b.post(`/login/link/${token}`, { _csrf: csrfOf(account.body) })).statusCode, 404, 'a login link works once')
  t.ok((await s.accounts.listSigninEvents(10)).some((e) => e.event === 'break_glass_used'))
})

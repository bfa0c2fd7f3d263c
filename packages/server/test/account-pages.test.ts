import t from 'tap'
import { hashToken, newToken } from '../src/secrets.js'
import { SESSION_COOKIE } from '../src/people-local.js'
import { addAccount, browser, buildTestApp, csrfOf, setCookies } from './helpers.js'

const PASSWORD_CANARY = 'canary-password-7Qx9-do-not-log'

async function withSetupToken(accounts: import('../src/accounts/account-store.js').AccountStore, now: Date): Promise<string> {
  const token = newToken()
  await accounts.replaceSetupToken(hashToken(token), now, new Date(now.getTime() + 3_600_000))
  return token
}

t.test('the setup link creates the first account once, then signs in', async (t) => {
  const { app, accounts, clock, log } = await buildTestApp(t)
  const token = await withSetupToken(accounts, new Date(clock.ms))
  const b = browser(app)
  const page = await b.get(`/setup?token=${token}`)
  t.equal(page.statusCode, 200)
  for (const label of [
    '<label for="email">Email</label>',
    '<label for="name">Name</label>',
    '<label for="password">Password</label>',
    '<label for="password2">Password again</label>',
  ])
    t.ok(page.body.includes(label), label)
  t.match(page.body, /<p class="hint" id="password-rules">At least 10 characters \(at most 1024\); any characters, spaces included\./, 'the rules in words')
  t.match(page.body, /id="password"[^>]*aria-describedby="password-rules"/, 'the rules are tied to the field')
  t.match(page.headers['content-security-policy'], /script-src 'self'/)
  const res = await b.post('/setup', {
    _csrf: csrfOf(page.body),
    token,
    email: 'Owner@Example.com',
    name: 'Owner',
    password: PASSWORD_CANARY,
    password2: PASSWORD_CANARY,
  })
  t.equal(res.statusCode, 303)
  t.equal(res.headers.location, '/')
  const cookie = res.cookies.find((c) => c.name === SESSION_COOKIE)
  t.ok(cookie, 'session cookie set')
  t.equal(cookie?.httpOnly, true)
  t.equal(cookie?.sameSite, 'Lax')
  t.notOk(cookie?.secure, 'not Secure over http')
  t.equal(await accounts.countAccounts(), 1)
  const account = await accounts.findAccountByEmail('owner@example.com')
  t.equal(account?.name, 'Owner')
  t.match(account?.passwordHash, /^\$argon2id\$/)

  // the same link again: refused, on GET and POST
  const again = await b.get(`/setup?token=${token}`)
  t.equal(again.statusCode, 404)
  t.notOk(again.body.includes('name="password"'))
  // the setup page's token was bound to the pre-session: after sign-in it is stale
  const stale = await b.post('/setup', {
    _csrf: csrfOf(page.body),
    token,
    email: 'x@example.com',
    name: 'X',
    password: 'another-password',
    password2: 'another-password',
  })
  t.equal(stale.statusCode, 403)
  // another browser with a valid form token: the link is used up
  const other = browser(app)
  const otherPage = await other.get('/login')
  const replay = await other.post('/setup', {
    _csrf: csrfOf(otherPage.body),
    token,
    email: 'x@example.com',
    name: 'X',
    password: 'another-password',
    password2: 'another-password',
  })
  t.equal(replay.statusCode, 404)
  t.equal(await accounts.countAccounts(), 1)
  t.notOk(log.text.includes(PASSWORD_CANARY), 'password not in the log')
  t.notOk(log.text.includes(token), 'setup token not in the log')
})

t.test('setup refuses unknown and expired tokens and a POST without CSRF', async (t) => {
  const { app, accounts, clock } = await buildTestApp(t)
  const token = await withSetupToken(accounts, new Date(clock.ms))
  const b = browser(app)
  t.equal((await b.get(`/setup?token=${newToken()}`)).statusCode, 404)
  t.equal((await b.get('/setup')).statusCode, 404)
  const page = await b.get(`/setup?token=${token}`)
  const noCsrf = await b.post('/setup', { token, email: 'a@example.com', name: 'A', password: PASSWORD_CANARY, password2: PASSWORD_CANARY })
  t.equal(noCsrf.statusCode, 403, 'no CSRF token → 403')
  t.match(noCsrf.body, /Reference/)
  t.equal(await accounts.countAccounts(), 0)
  const short = await b.post('/setup', { _csrf: csrfOf(page.body), token, email: 'a@example.com', name: 'A', password: 'short', password2: 'short' })
  t.equal(short.statusCode, 400)
  t.match(short.body, /at least 10 characters/)
  t.notOk(short.body.includes('value="short"'), 'a refused password is never echoed')
  clock.ms += 2 * 3_600_000
  t.equal((await b.get(`/setup?token=${token}`)).statusCode, 404, 'expired')
})

t.test('setup: two different passwords are refused, say so, and create nothing', async (t) => {
  const { app, accounts, clock, log } = await buildTestApp(t)
  const token = await withSetupToken(accounts, new Date(clock.ms))
  const b = browser(app)
  const page = await b.get(`/setup?token=${token}`)
  const cases = [{ password2: `${PASSWORD_CANARY}-typo`, why: 'a typo' }, { password2: '', why: 'the second field empty' }, { why: 'the second field missing' }]
  let form = page.body
  for (const c of cases) {
    const fields: Record<string, string> = { _csrf: csrfOf(form), token, email: 'owner@example.com', name: 'Owner', password: PASSWORD_CANARY }
    if (c.password2 !== undefined) fields.password2 = c.password2
    const res = await b.post('/setup', fields)
    t.equal(res.statusCode, 400, c.why)
    t.match(res.body, /role="alert"/, c.why)
    t.match(res.body, /the two passwords are not the same; type the same password in both fields/, c.why)
    t.match(res.body, 'value="owner@example.com"', `${c.why}: the email is kept`)
    t.notOk(res.body.includes(PASSWORD_CANARY), `${c.why}: neither password is echoed`)
    t.equal(await accounts.countAccounts(), 0, `${c.why}: nothing created`)
    t.notOk(
      res.cookies.some((k) => k.name === SESSION_COOKIE),
      `${c.why}: not signed in`,
    )
    form = res.body
  }
  // the link still works: the same password twice creates the account
  const ok = await b.post('/setup', {
    _csrf: csrfOf(form),
    token,
    email: 'owner@example.com',
    name: 'Owner',
    password: PASSWORD_CANARY,
    password2: PASSWORD_CANARY,
  })
  t.equal(ok.statusCode, 303)
  t.equal(await accounts.countAccounts(), 1)
  t.notOk(log.text.includes(PASSWORD_CANARY), 'no password in the log')
})

t.test('login: right password signs in, wrong email and wrong password answer the same', async (t) => {
  const { app, accounts, log } = await buildTestApp(t)
  await addAccount(accounts, 'ana@example.com', PASSWORD_CANARY, 'Ana')
  const b = browser(app)
  const page = await b.get('/login?return_to=%2Fv%2F123')
  t.equal(page.statusCode, 200)
  t.ok(page.body.includes('<label for="email">Email</label>'))
  t.ok(page.body.includes('<label for="password">Password</label>'))
  t.ok(page.body.includes('<button type="submit">Sign in</button>'))
  const csrf = csrfOf(page.body)

  const wrongPassword = await b.post('/login', { _csrf: csrf, email: 'ana@example.com', password: 'wrong-password-1', return_to: '/v/123' })
  const wrongEmail = await b.post('/login', { _csrf: csrf, email: 'nobody@example.com', password: 'wrong-password-1', return_to: '/v/123' })
  t.equal(wrongPassword.statusCode, 401)
  t.equal(wrongEmail.statusCode, 401)
  const strip = (s: string) =>
    s
      .replace(/value="[^"]*"/g, '')
      .replace(/<code>[0-9A-Z]{10}<\/code>/g, '')
      .replace(/What: [^<]*|Reference: [0-9A-Z]+|failure-\d+/g, '')
  t.equal(strip(wrongPassword.body), strip(wrongEmail.body), 'same page for both')
  t.notOk(wrongPassword.cookies.some((c) => c.name === 'envkeep_session'))

  const ok = await b.post('/login', { _csrf: csrf, email: 'ANA@example.com', password: PASSWORD_CANARY, return_to: '/v/123' })
  t.equal(ok.statusCode, 303)
  t.equal(ok.headers.location, '/v/123')
  const session = b.jar[SESSION_COOKIE]
  t.ok(session)
  // only the hash is stored
  t.ok(await accounts.findSession(hashToken(session!), new Date()), 'session found by its hash')
  t.notOk(log.text.includes(PASSWORD_CANARY))
  t.notOk(log.text.includes(session!), 'session token not in the log')
})

t.test('login without CSRF is refused; an outside return_to goes home', async (t) => {
  const { app, accounts } = await buildTestApp(t)
  await addAccount(accounts, 'ana@example.com', PASSWORD_CANARY)
  const b = browser(app)
  await b.get('/login')
  const noToken = await b.post('/login', { email: 'ana@example.com', password: PASSWORD_CANARY, password2: PASSWORD_CANARY })
  t.equal(noToken.statusCode, 403)
  t.notOk(b.jar[SESSION_COOKIE])
  for (const bad of ['https://evil.example/', '//evil.example/x', '/\\evil', 'javascript:alert(1)']) {
    const fresh = browser(app)
    const page = await fresh.get('/login')
    const res = await fresh.post('/login', { _csrf: csrfOf(page.body), email: 'ana@example.com', password: PASSWORD_CANARY, return_to: bad })
    t.equal(res.headers.location, '/', bad)
  }
})

t.test('logout needs CSRF, ends the session and clears the cookie', async (t) => {
  const { app, accounts } = await buildTestApp(t)
  await addAccount(accounts, 'ana@example.com', PASSWORD_CANARY)
  const b = browser(app)
  const page = await b.get('/login')
  await b.post('/login', { _csrf: csrfOf(page.body), email: 'ana@example.com', password: PASSWORD_CANARY, password2: PASSWORD_CANARY })
  const token = b.jar[SESSION_COOKIE]!
  t.ok(await accounts.findSession(hashToken(token), new Date()))

  const noCsrf = await b.post('/logout', {})
  t.equal(noCsrf.statusCode, 403)
  t.ok(await accounts.findSession(hashToken(token), new Date()), 'still signed in after a CSRF-less POST')

  const home = await b.get('/')
  t.match(home.body, '<a class="sign-out" href="/logout">Sign out</a>', 'every page offers Sign out')
  const logoutPage = await b.get('/logout')
  t.ok(logoutPage.body.includes('Sign out'))
  const res = await b.post('/logout', { _csrf: csrfOf(logoutPage.body) })
  t.equal(res.statusCode, 303)
  t.equal(res.headers.location, '/login')
  t.equal(await accounts.findSession(hashToken(token), new Date()), null)
  const cleared = res.cookies.find((c) => c.name === SESSION_COOKIE)
  t.equal(cleared?.value, '')
})

t.test('sign-in attempts are limited per address', async (t) => {
  const { app, accounts, clock } = await buildTestApp(t, { loginAttemptsPerMinute: 3 })
  await addAccount(accounts, 'ana@example.com', PASSWORD_CANARY)
  const b = browser(app)
  const csrf = csrfOf((await b.get('/login')).body)
  const statuses: number[] = []
  for (let i = 0; i < 4; i++) statuses.push((await b.post('/login', { _csrf: csrf, email: 'ana@example.com', password: 'nope-nope-nope' })).statusCode)
  t.same(statuses, [401, 401, 401, 429])
  const limited = await b.post('/login', { _csrf: csrf, email: 'ana@example.com', password: PASSWORD_CANARY, password2: PASSWORD_CANARY })
  t.equal(limited.statusCode, 429, 'even the right password waits')
  t.ok(Number(limited.headers['retry-after']) > 0)
  clock.ms += 61_000
  t.equal((await b.post('/login', { _csrf: csrf, email: 'ana@example.com', password: PASSWORD_CANARY, password2: PASSWORD_CANARY })).statusCode, 303)
})

t.test('the people adapter reads the session cookie; expired sessions are nobody', async (t) => {
  const { app, accounts, clock } = await buildTestApp(t)
  const ana = await addAccount(accounts, 'ana@example.com', PASSWORD_CANARY, 'Ana')
  const b = browser(app)
  const page = await b.get('/login')
  await b.post('/login', { _csrf: csrfOf(page.body), email: 'ana@example.com', password: PASSWORD_CANARY, password2: PASSWORD_CANARY })
  const token = b.jar[SESSION_COOKIE]!
  const s = await accounts.findSession(hashToken(token), new Date(clock.ms))
  t.equal(s?.account.id, ana.id)
  t.equal(await accounts.findSession(hashToken(token), new Date(clock.ms + 15 * 86_400_000)), null, 'after 14 days: gone')
})

t.test('behind https the session and CSRF cookies are Secure and __Host- (path /); a base path prefixes the pages', async (t) => {
  const { app, accounts } = await buildTestApp(t, { env: { ENVKEEP_BASE_URL: 'https://keep.example.com/team' } })
  await addAccount(accounts, 'ana@example.com', PASSWORD_CANARY)
  const b = browser(app)
  const page = await b.get('/team/login')
  t.equal(page.statusCode, 200)
  t.match(page.body, /action="\/team\/login"/)
  const csrfCookie = page.cookies.find((c) => c.name === '__Host-envkeep_csrf')
  t.equal(csrfCookie?.secure, true)
  t.equal(csrfCookie?.path, '/')
  t.notOk(
    page.cookies.some((c) => c.name === 'envkeep_csrf'),
    'no unprefixed CSRF cookie',
  )
  const res = await b.post('/team/login', { _csrf: csrfOf(page.body), email: 'ana@example.com', password: PASSWORD_CANARY, return_to: '/elsewhere' })
  t.equal(res.statusCode, 303)
  t.equal(res.headers.location, '/team/', 'a return path outside the base path goes home')
  const cookie = res.cookies.find((c) => c.name === `__Host-${SESSION_COOKIE}`)
  t.equal(cookie?.secure, true)
  t.equal(cookie?.path, '/', '__Host- cookies have Path=/')
  t.notOk(
    res.cookies.some((c) => c.name === SESSION_COOKIE),
    'no unprefixed session cookie',
  )
  t.equal((await b.get('/login')).statusCode, 404, 'nothing outside the base path')
})

t.test('a return_to outside Latin-1, or escaping the base path, is encoded or sent home; never a 500 after the password', async (t) => {
  const { app, accounts } = await buildTestApp(t)
  await addAccount(accounts, 'ana@example.com', PASSWORD_CANARY)
  const cases: [string, string][] = [
    ['/v/\u2028x', '/v/%E2%80%A8x'],
    ['/v/caf\u00e9?tab=\u00fc', '/v/caf%C3%A9?tab=%C3%BC'],
    ['/v/\ud800', '/v/%EF%BF%BD'],
    ['/v/x/../../sign-ins', '/sign-ins'],
    ['/%2F%2Fevil.example', '/%2F%2Fevil.example'],
    ['/\u0000x', '/'],
  ]
  // (messages show escapes: a raw U+2028 would end the TAP line)
  const shown = (s: string) => s.replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
  for (const [raw, location] of cases) {
    const b = browser(app)
    const page = await b.get(`/login?${new URLSearchParams({ return_to: raw }).toString()}`)
    t.equal(page.statusCode, 200, `the sign-in page for ${shown(raw)}`)
    const res = await b.post('/login', { _csrf: csrfOf(page.body), email: 'ana@example.com', password: PASSWORD_CANARY, return_to: raw })
    t.equal(res.statusCode, 303, shown(raw))
    t.equal(res.headers.location, location, shown(raw))
    t.ok(b.jar[SESSION_COOKIE], 'the session cookie was sent with the redirect')
  }
})

t.test('behind a base path, a return_to that climbs out of it goes home', async (t) => {
  const { app, accounts } = await buildTestApp(t, { env: { ENVKEEP_BASE_URL: 'http://127.0.0.1/team' } })
  await addAccount(accounts, 'ana@example.com', PASSWORD_CANARY)
  const b = browser(app)
  const page = await b.get('/team/login')
  const res = await b.post('/team/login', { _csrf: csrfOf(page.body), email: 'ana@example.com', password: PASSWORD_CANARY, return_to: '/team/../elsewhere' })
  t.equal(res.headers.location, '/team/')
})

t.test('per-account back-off: after 5 wrong passwords, from any address, tries wait 1, 2, 4 … s (at most 30 s); never a lock-out', async (t) => {
  const { app, accounts, clock } = await buildTestApp(t)
  await addAccount(accounts, 'ana@example.com', PASSWORD_CANARY)
  let n = 0
  const attempt = async (password: string, email = 'ana@example.com') => {
    const address = `198.51.100.${++n % 250}` // a new address each time: the per-address limit never applies
    const page = await app.inject({ method: 'GET', url: '/login', remoteAddress: address })
    const cookie = Object.entries(setCookies(page))
      .map(([k, v]) => `${k}=${v}`)
      .join('; ')
    return app.inject({
      method: 'POST',
      url: '/login',
      remoteAddress: address,
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ _csrf: csrfOf(page.body), email, password }).toString(),
    })
  }
  for (let i = 0; i < 5; i++) t.equal((await attempt(`wrong-${i}`)).statusCode, 401, `wrong password ${i + 1}`)
  const held = await attempt(PASSWORD_CANARY)
  t.equal(held.statusCode, 429, 'the sixth try waits, even with the right password (no oracle)')
  t.equal(held.headers['retry-after'], '1')
  t.match(held.body, /too many wrong passwords for this email; wait 1 seconds/)
  t.notOk(held.body.includes(PASSWORD_CANARY))
  t.equal((await attempt('wrong', 'ANA@example.com ')).statusCode, 429, 'the same account however the email is written')
  t.equal((await attempt('wrong', 'bob@example.com')).statusCode, 401, 'other accounts are not slowed')
  clock.ms += 1000
  t.equal((await attempt('wrong-6')).statusCode, 401, 'after 1 s one more try')
  t.equal((await attempt('wrong-7')).statusCode, 429)
  t.equal((await attempt('wrong-7')).headers['retry-after'], '2', 'then 2 s')
  // a stranger keeps guessing: the wait never exceeds 30 s
  for (let i = 0; i < 12; i++) {
    clock.ms += 30_000
    t.equal((await attempt(`wrong-x${i}`)).statusCode, 401)
  }
  t.equal((await attempt(PASSWORD_CANARY)).headers['retry-after'], '30', 'capped at 30 s')
  clock.ms += 30_000
  t.equal((await attempt(PASSWORD_CANARY)).statusCode, 303, 'the owner gets in 30 s after the last guess')
  t.equal((await attempt('wrong-after')).statusCode, 401, 'a success starts afresh')
  t.equal((await attempt(PASSWORD_CANARY)).statusCode, 303)
})

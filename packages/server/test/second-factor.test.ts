import { randomBytes, randomUUID } from 'node:crypto'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { sql, type Kysely } from 'kysely'
import { createLocalKeyring } from '@envkeep/env-api-plugin'
import { mintSignIn, testLogEntry } from '@envkeep/env-api-plugin/testing'
import { createSqliteStorage } from '@envkeep/storage-sqlite'
import { createSqliteAccountStore } from '../src/accounts/sqlite-account-store.js'
import { totpFor } from '../src/factors.js'
import { hashToken } from '../src/secrets.js'
import { addAccount, browser, buildTestApp, csrfOf, runCli, tempDir, type TestApp } from './helpers.js'

// Issue 22, items 3-5: a second factor for passwords (TOTP, recovery codes), sessions a person
// controls on /account, and sign-in events at server level. SQLite here; PostgreSQL with
// ENVKEEP_TEST_STORAGE=postgres.

const PASSWORD = 'canary-two-factor-password-1'
const NEW_PASSWORD = 'canary-two-factor-password-2'

type B = ReturnType<typeof browser>

async function setUp(t: Test, env: Record<string, string> = {}) {
  const s = await buildTestApp(t, { env, keyring: createLocalKeyring(randomBytes(32)) })
  const ana = await addAccount(s.accounts, 'ana@example.com', PASSWORD, 'Ana')
  return { ...s, ana }
}

/** Password step; returns the browser and the answer (a session, or the second step). */
async function password(s: TestApp, pw = PASSWORD, agent = 'Mozilla/5.0 (X11; Linux x86_64) Chrome/140.0 Safari/537.36') {
  const b = browser(s.app)
  const login = await b.get('/login')
  const res = await s.app.inject({
    method: 'POST',
    url: '/login',
    headers: {
      cookie: Object.entries(b.jar)
        .map(([k, v]) => `${k}=${v}`)
        .join('; '),
      'content-type': 'application/x-www-form-urlencoded',
      'user-agent': agent,
    },
    payload: new URLSearchParams({ _csrf: csrfOf(login.body), email: 'ana@example.com', password: pw, return_to: '/' }).toString(),
  })
  for (const c of res.cookies as { name: string; value: string }[]) b.jar[c.name] = c.value
  return { b, res }
}

async function secondStep(b: B, code: string) {
  const page = await b.get('/login/second-factor')
  return b.post('/login/second-factor', { _csrf: csrfOf(page.body), code })
}

/** The sign-in events logged, sorted (the test's clock stands still, so their order is not kept). */
async function events(s: TestApp, skip = ''): Promise<string[]> {
  return (await s.accounts.listSigninEvents(100))
    .map((e) => `${e.event}${e.detail ? `:${e.detail}` : ''}`)
    .filter((e) => skip === '' || !e.startsWith(skip))
    .sort()
}

/** Adds an authenticator app on /account; returns its secret and the recovery codes shown. */
async function addApp(s: TestApp, b: B) {
  const page = await b.get('/account/totp')
  t.equal(page.statusCode, 200)
  const secret = /name="secret" value="([A-Z2-7]{32})"/.exec(page.body)![1]!
  const res = await b.post('/account/totp', { _csrf: csrfOf(page.body), secret, name: 'Phone', code: totpFor(secret, 'x').generate({ timestamp: s.clock.ms }) })
  const codes = [...res.body.matchAll(/<li><code class="value">([a-z0-9]{5}-[a-z0-9]{5})<\/code><\/li>/g)].map((m) => m[1]!)
  return { res, secret, codes }
}

t.test('TOTP: added on /account with ten recovery codes shown once; sealed; the second step asks it; each code works once', async (t) => {
  const s = await setUp(t)
  const { b, res } = await password(s)
  t.equal(res.headers.location, '/', 'no factor yet: the password alone')
  const added = await addApp(s, b)
  t.equal(added.res.statusCode, 200)
  t.equal(added.codes.length, 10, 'ten recovery codes')
  t.equal(new Set(added.codes).size, 10)
  // stored: the secret sealed, the codes hashed
  const db = (s.storage as unknown as { database: { db: Kysely<unknown> } }).database.db
  const dump = JSON.stringify([(await sql`select * from account_factors`.execute(db)).rows, (await sql`select * from recovery_codes`.execute(db)).rows])
  t.notOk(dump.includes(added.secret), 'the secret is sealed')
  for (const c of added.codes) t.notOk(dump.includes(c) || dump.includes(c.replace('-', '')), 'a recovery code only as a hash')
  const account = await b.get('/account')
  t.match(account.body, '>Phone</td>')
  t.match(account.body, '10 recovery code(s) left')
  t.notMatch(account.body, added.codes[0]!, 'codes are never shown again')

  // a password alone no longer signs in
  const first = await password(s)
  t.equal(first.res.headers.location, '/login/second-factor')
  t.notOk(
    Object.keys(first.b.jar).some((k) => k.endsWith('envkeep_session')),
    'no session before the second step',
  )
  t.equal((await first.b.get('/')).statusCode, 303, 'signed out still')
  const wrong = await secondStep(first.b, '000000')
  t.equal(wrong.statusCode, 401)
  t.match(wrong.body, 'the sign-in did not succeed')
  t.notMatch(wrong.body, /authenticator app code is wrong|password was right/i, 'does not say which factor failed')
  s.clock.ms += 30_000
  const code = totpFor(added.secret, 'x').generate({ timestamp: s.clock.ms })
  const ok = await secondStep(first.b, code)
  t.equal(ok.statusCode, 303)
  t.equal(ok.headers.location, '/')
  t.equal((await first.b.get('/')).statusCode, 200, 'signed in')
  // the same code again: refused (a time step works once)
  const again = await password(s)
  t.equal((await secondStep(again.b, code)).statusCode, 401, 'a TOTP code works once')
  // a recovery code works once, typed in any case with spaces
  const rc = added.codes[3]!
  t.equal((await secondStep(again.b, ` ${rc.toUpperCase()} `)).statusCode, 303, 'a recovery code works')
  const third = await password(s)
  t.equal((await secondStep(third.b, rc)).statusCode, 401, 'and only once')
  t.same(await events(s), [
    'factor_added:totp',
    'recovery_code_used',
    'signin_failed:second factor',
    'signin_failed:second factor',
    'signin_failed:second factor',
    'signin_succeeded:password',
    'signin_succeeded:password+recovery code',
    'signin_succeeded:password+totp',
  ])
  for (const secret of [PASSWORD, added.secret, code, rc]) t.notOk(s.log.text.includes(secret), 'no password, secret or code in the log')
})

t.test('an owner sees which members have no second factor; other members do not', async (t) => {
  const s = await setUp(t)
  const ed = await addAccount(s.accounts, 'ed@example.com', PASSWORD, 'Ed')
  const vaultId = randomUUID()
  await s.storage.createVault(
    {
      id: vaultId,
      name: 'Acme',
      ownerId: s.ana.id,
      plan: 'self-hosted',
      environments: [{ name: 'development', ownersOnly: false }],
      now: new Date(s.clock.ms),
    },
    testLogEntry({ vaultId, action: 'vault_created' }),
  )
  await s.storage.changeMember({ kind: 'set', vaultId, personId: ed.id, role: 'editor' }, testLogEntry({ vaultId, action: 'member_added', subject: ed.id }))
  const { b } = await password(s)
  await addApp(s, b)
  const members = await b.get(`/v/${vaultId}/members`)
  t.equal(members.statusCode, 200)
  const row = (name: string) => {
    const at = members.body.indexOf(`<span class="person">${name}</span>`)
    t.ok(at >= 0, `${name} is listed`)
    return members.body.slice(at, members.body.indexOf('</td>', at))
  }
  t.match(row('Ed'), 'no second factor')
  t.notMatch(row('Ana'), 'no second factor')
  // Ed (an editor) sees no such mark
  const e = browser(s.app)
  const login = await e.get('/login')
  await e.post('/login', { _csrf: csrfOf(login.body), email: 'ed@example.com', password: PASSWORD, return_to: '/' })
  const seen = await e.get(`/v/${vaultId}/members`)
  t.equal(seen.statusCode, 200)
  t.notMatch(seen.body, 'no second factor')
})

t.test('ENVKEEP_REQUIRE_SECOND_FACTOR=true: a password account adds one at its next sign-in, and cannot remove its last', async (t) => {
  const s = await setUp(t, { ENVKEEP_REQUIRE_SECOND_FACTOR: 'true' })
  const { b, res } = await password(s)
  t.equal(res.headers.location, '/login/second-factor')
  const page = await b.get('/login/second-factor')
  t.match(page.body, 'This server asks every account for a second factor.')
  const secret = /name="secret" value="([A-Z2-7]{32})"/.exec(page.body)![1]!
  const bad = await b.post('/login/second-factor/enrol', { _csrf: csrfOf(page.body), secret, code: '123456' })
  t.equal(bad.statusCode, 400)
  t.match(bad.body, 'that code does not match')
  t.equal((await b.get('/')).statusCode, 303, 'no session yet')
  const done = await b.post('/login/second-factor/enrol', { _csrf: csrfOf(bad.body), secret, code: totpFor(secret, 'x').generate({ timestamp: s.clock.ms }) })
  t.equal(done.statusCode, 200)
  t.match(done.body, 'Your recovery codes')
  t.equal((await b.get('/')).statusCode, 200, 'signed in')
  const account = await b.get('/account')
  const id = /name="factor" value="([^"]+)"/.exec(account.body)![1]!
  const removed = await b.post('/account/factors/remove', { _csrf: csrfOf(account.body), factor: id })
  t.equal(removed.statusCode, 409)
  t.match(removed.body, 'this server requires a second factor')
  t.equal((await s.accounts.listFactors(s.ana.id)).length, 1)
})

t.test('/account: web sessions with device, address and last use; end one; a password change ends the others; sign out everywhere', async (t) => {
  const s = await setUp(t)
  const laptop = (await password(s)).b
  const phone = (await password(s, PASSWORD, 'Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) Version/18.0 Mobile Safari/604.1')).b
  const tablet = (await password(s, PASSWORD, 'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:140.0) Gecko/20100101 Firefox/140.0')).b
  t.match((await laptop.get('/')).body, '<a class="who" href="/account" title="Your account">Ana</a>', 'the name in the header leads to /account')
  await mintSignIn(s.storage, { baseUrl: s.config.baseUrl, personId: s.ana.id, scopes: ['env:read'], now: new Date(s.clock.ms) })
  const page = await laptop.get('/account')
  t.equal(page.statusCode, 200)
  t.match(page.body, 'Chrome on Linux')
  t.match(page.body, 'Safari on iOS')
  t.match(page.body, 'Firefox on Windows')
  t.match(page.body, '127.0.0.1')
  t.match(page.body, 'this browser')
  t.match(page.body, 'href="/sign-ins"', 'beside the command-line sign-ins')
  const cliPart = page.body.slice(page.body.indexOf('Command-line sign-ins'))
  t.match(cliPart, '<td data-label="Client">', 'the CLI sign-in is listed')
  for (const b of [laptop, phone, tablet]) t.notOk(page.body.includes(b.jar.envkeep_session!), 'no session token on the page')
  // end the phone's session
  const sessions = await s.accounts.listSessionsOf(s.ana.id, new Date(s.clock.ms))
  t.equal(sessions.length, 3)
  const phoneHash = sessions.find((x) => x.userAgent?.includes('iPhone'))!.tokenHash
  t.equal((await laptop.post('/account/sessions/end', { _csrf: csrfOf(page.body), session: phoneHash })).statusCode, 303)
  t.equal((await phone.get('/')).statusCode, 303, 'the phone is signed out')
  t.equal((await tablet.get('/')).statusCode, 200)
  // a password change ends the other sessions, not this one
  const form = await laptop.get('/account')
  const changed = await laptop.post('/account/password', { _csrf: csrfOf(form.body), current: PASSWORD, password: NEW_PASSWORD, password2: NEW_PASSWORD })
  t.equal(changed.statusCode, 303)
  t.equal((await tablet.get('/')).statusCode, 303, 'the tablet is signed out')
  t.equal((await laptop.get('/')).statusCode, 200, 'this browser stays signed in')
  // sign out everywhere
  const other = (await password(s, NEW_PASSWORD)).b
  const last = await laptop.get('/account')
  t.equal((await laptop.post('/account/sessions/end-all', { _csrf: csrfOf(last.body) })).statusCode, 303)
  t.equal((await laptop.get('/')).statusCode, 303)
  t.equal((await other.get('/')).statusCode, 303)
  t.same(await s.accounts.listSessionsOf(s.ana.id, new Date(s.clock.ms)), [])
  t.same(await events(s, 'signin_succeeded'), ['password_changed', 'sessions_ended:everywhere: 2 web, 1 command line', 'sessions_ended:one web session'])
})

t.test('admin user reset-factors (a lost phone), and admin audit lists the sign-in events', async (t) => {
  const dir = tempDir(t)
  const env = { ENVKEEP_DATA_DIR: join(dir, 'data') }
  t.equal((await runCli(['init'], env, '', dir)).code, 0)
  t.equal((await runCli(['admin', 'user', 'create', '--email', 'ana@example.com', '--name', 'Ana', '--password-stdin'], env, PASSWORD, dir)).code, 0)
  const storage = await createSqliteStorage({ filename: join(dir, 'data', 'envkeep.db') })
  t.teardown(() => storage.close())
  const accounts = await createSqliteAccountStore(storage.database)
  const ana = (await accounts.findAccountByEmail('ana@example.com'))!
  await accounts.addFactor({ id: 'f1', accountId: ana.id, kind: 'totp', name: 'Phone', sealedSecret: 'c2VhbGVk' }, new Date())
  await accounts.replaceRecoveryCodes(ana.id, ['a'.repeat(64)])
  await accounts.createSession('d'.repeat(64), ana.id, new Date(), new Date(Date.now() + 3_600_000))
  const r = await runCli(['admin', 'user', 'reset-factors', '--email', 'ana@example.com', '--json'], env, '', dir)
  t.equal(r.code, 0, r.stderr)
  t.equal(JSON.parse(r.stdout).removed, 1)
  t.same(await accounts.listFactors(ana.id), [])
  t.equal(await accounts.countRecoveryCodes(ana.id), 0)
  t.equal(await accounts.findSession('d'.repeat(64), new Date()), null)
  const audit = await runCli(['admin', 'audit'], env, '', dir)
  t.equal(audit.code, 0)
  t.match(audit.stdout, /factors_reset {2}ana@example\.com {2}by the server administrator: 1 factor\(s\)/)
  t.equal((await runCli(['admin', 'user', 'reset-factors', '--email', 'nobody@example.com'], env, '', dir)).code, 1)
  // the break-glass link: printed here, its hash stored, logged
  const link = await runCli(['admin', 'login-link', '--email', 'ana@example.com', '--json'], env, '', dir)
  t.equal(link.code, 0, link.stderr)
  const url = JSON.parse(link.stdout).link as string
  t.match(url, /^http:\/\/127\.0\.0\.1:8080\/login\/link\/[A-Za-z0-9_-]{43}$/)
  t.ok(await accounts.findLoginLink(hashToken(url.slice(url.lastIndexOf('/') + 1)), new Date()), 'stored as a hash, live')
  t.match((await runCli(['admin', 'audit'], env, '', dir)).stdout, 'link_created  ana@example.com  break-glass link by the server administrator')
})

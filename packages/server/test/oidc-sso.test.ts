import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import { chromium, type Browser, type Page } from 'playwright-core'
import { testLogEntry } from '@envkeep/env-api-plugin/testing'
import { CHROMIUM_LAUNCH, freePort, spawnNode } from '@envkeep/test-support'
import { addAccount, buildTestApp, tempDir, type TestApp } from './helpers.js'

const CLI_BIN = fileURLToPath(new URL('../../cli/dist/bin.js', import.meta.url))
import { providerLogin, startProvider, type TestIdentity } from './oidc-provider.js'

// Issue 22, item 1: single sign-on by OpenID Connect, in Chromium, through a real provider
// (oidc-provider) on loopback. SQLite here; PostgreSQL with ENVKEEP_TEST_STORAGE=postgres.

const CLIENT_SECRET = 'canary-oidc-client-secret-5'
const PASSWORD = 'canary-sso-password-5'

async function setUp(t: Test, env: Record<string, string> = {}) {
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const people = new Map<string, TestIdentity>([
    ['ana-sub', { email: 'ana@example.com', email_verified: true, name: 'Ana', groups: ['devs'] }],
    ['ana-other-sub', { email: 'ana@example.com', email_verified: true, name: 'Ana again' }],
    ['newbie-sub', { email: 'newbie@example.com', email_verified: true, name: 'New Bie' }],
    ['unverified-sub', { email: 'ed@example.com', email_verified: false }],
    ['foreign-sub', { email: 'x@other.example.org', email_verified: true }],
  ])
  const { issuer } = await startProvider(t, { redirectUri: `${base}/login/oidc/callback`, clientSecret: CLIENT_SECRET, people })
  const dir = tempDir(t)
  const rules = join(dir, 'rules.json')
  writeFileSync(rules, JSON.stringify([{ group: 'devs', vault: 'Acme', role: 'editor' }]))
  const s: TestApp = await buildTestApp(t, {
    env: {
      ENVKEEP_BASE_URL: base,
      ENVKEEP_OIDC_ISSUER: issuer,
      ENVKEEP_OIDC_CLIENT_ID: 'envkeep',
      ENVKEEP_OIDC_CLIENT_SECRET: CLIENT_SECRET,
      ENVKEEP_OIDC_ALLOW_HTTP_ISSUER: 'loopback',
      ENVKEEP_OIDC_NAME: 'Test IdP',
      ENVKEEP_OIDC_SCOPES: 'openid email profile groups',
      ENVKEEP_OIDC_ALLOWED_DOMAINS: 'example.com',
      ENVKEEP_OIDC_AUTO_CREATE: 'true',
      ENVKEEP_OIDC_GROUP_RULES: rules,
      ...env,
    },
  })
  await s.app.listen({ host: '127.0.0.1', port })
  const owner = await addAccount(s.accounts, 'olga@example.com', PASSWORD, 'Olga Owner')
  const ana = await addAccount(s.accounts, 'ana@example.com', PASSWORD, 'Ana')
  await addAccount(s.accounts, 'ed@example.com', PASSWORD, 'Ed')
  const vaultId = crypto.randomUUID()
  await s.storage.createVault(
    {
      id: vaultId,
      name: 'Acme',
      ownerId: owner.id,
      plan: 'self-hosted',
      environments: [{ name: 'development', ownersOnly: false }],
      now: new Date(s.clock.ms),
    },
    testLogEntry({ vaultId, action: 'vault_created' }),
  )
  const browser: Browser = await chromium.launch(CHROMIUM_LAUNCH)
  t.teardown(() => browser.close())
  /** A fresh browser: Sign in with Test IdP as `login`; returns the page where envkeep answered. */
  async function sso(login: string): Promise<Page> {
    const page = await (await browser.newContext()).newPage()
    await page.goto(`${base}/login`)
    await page.getByRole('link', { name: 'Sign in with Test IdP' }).click()
    await providerLogin(page, login, base)
    await page.waitForLoadState()
    return page
  }
  // discovery runs in the background: wait until the button works
  for (;;) {
    const res = await s.app.inject({ method: 'GET', url: '/login/oidc' })
    if (res.statusCode === 303) break
    await new Promise((r) => setTimeout(r, 100))
  }
  return { ...s, base, people, owner, ana, vaultId, sso }
}

t.test(
  'first sign-in adopts an account by verified email of an allowed domain, or creates one; a group rule adds and later removes a membership',
  async (t) => {
    const s = await setUp(t)
    const page = await s.sso('ana-sub')
    t.equal(new URL(page.url()).pathname, '/', 'signed in, on the vault list')
    t.match(await page.content(), 'Acme', 'the group rule made Ana a member of Acme')
    t.equal(await s.accounts.findIdentity(s.config.oidc!.issuer, 'ana-sub'), s.ana.id, 'linked to (iss, sub)')
    const member = (await s.storage.listMembers(s.vaultId)).find((m) => m.personId === s.ana.id)
    t.equal(member?.role, 'editor')
    const [added] = await s.storage.listAccessLog(s.vaultId, { action: 'member_added', limit: 1 })
    t.equal(added?.clientId, 'group-rule:devs', 'logged as made by the rule')
    t.equal(added?.personId, null)
    const log = await page.context().newPage()
    await log.goto(`${s.base}/v/${s.vaultId}/access-log`)
    t.match(await log.content(), 'group rule devs', 'the access log page names the rule')

    // the group is gone at the next sign-in: the membership the rule made goes too
    s.people.set('ana-sub', { email: 'ana@example.com', email_verified: true, name: 'Ana', groups: [] })
    const again = await s.sso('ana-sub')
    t.equal(new URL(again.url()).pathname, '/')
    t.notOk(
      (await s.storage.listMembers(s.vaultId)).some((m) => m.personId === s.ana.id),
      'removed with the group',
    )
    const [removed] = await s.storage.listAccessLog(s.vaultId, { action: 'member_removed', limit: 1 })
    t.equal(removed?.clientId, 'group-rule:devs')

    // a membership given by hand is never touched by the rules
    await s.storage.changeMember(
      { kind: 'set', vaultId: s.vaultId, personId: s.ana.id, role: 'viewer' },
      testLogEntry({ vaultId: s.vaultId, action: 'member_added', subject: s.ana.id }),
    )
    await s.sso('ana-sub')
    t.equal((await s.storage.listMembers(s.vaultId)).find((m) => m.personId === s.ana.id)?.role, 'viewer', 'kept as given')

    // a new person of an allowed domain: created, reaching nothing
    const newbie = await s.sso('newbie-sub')
    t.equal(new URL(newbie.url()).pathname, '/')
    const created = await s.accounts.findAccountByEmail('newbie@example.com')
    t.equal(created?.name, 'New Bie')
    t.equal(created?.emailConfirmed, true)
    t.same(await s.storage.listVaults(created!.id), [], 'no vault until invited or mapped')
    const events = (await s.accounts.listSigninEvents(50)).map((e) => `${e.event}:${e.detail}`)
    t.ok(events.includes('link_created:single sign-on: adopted by verified email'))
    t.ok(events.includes('link_created:single sign-on: account created'))
    t.notOk(s.log.text.includes(CLIENT_SECRET), 'the client secret never reaches the log')
  },
)

t.test('refusals, each a page in our words: unverified email, foreign domain, a changed sub, a replayed callback', async (t) => {
  const s = await setUp(t)
  const unverified = await s.sso('unverified-sub')
  t.match(await unverified.content(), 'does not say your email address is verified')
  t.equal(await s.accounts.identityOf((await s.accounts.findAccountByEmail('ed@example.com'))!.id, s.config.oidc!.issuer), null, 'not adopted')

  const foreign = await s.sso('foreign-sub')
  t.match(await foreign.content(), 'cannot sign in with Test IdP on this server')
  t.equal(await s.accounts.findAccountByEmail('x@other.example.org'), null, 'not created')

  // Ana links (adopted), then another identity with her email tries: a link never moves
  await s.sso('ana-sub')
  const other = await s.sso('ana-other-sub')
  t.match(await other.content(), 'linked to a different Test IdP identity')
  t.equal(await s.accounts.findIdentity(s.config.oidc!.issuer, 'ana-other-sub'), null)
  t.equal(await s.accounts.findIdentity(s.config.oidc!.issuer, 'ana-sub'), s.ana.id)

  // a replayed callback: the same answer from the provider, a second time
  const page = await (await (await chromium.launch(CHROMIUM_LAUNCH)).newContext()).newPage()
  t.teardown(() => page.context().browser()?.close())
  await page.goto(`${s.base}/login`)
  const callback = page.waitForRequest((r) => r.url().includes('/login/oidc/callback'))
  await page.getByRole('link', { name: 'Sign in with Test IdP' }).click()
  await providerLogin(page, 'ana-sub', s.base)
  const url = (await callback).url()
  t.equal(new URL(page.url()).pathname, '/')
  await page.goto(url)
  t.match(await page.content(), 'used already, or it is too old')
  const fresh = await (await page.context().browser()!.newContext()).newPage()
  await fresh.goto(url)
  t.match(await fresh.content(), 'used already, or it is too old', 'from another browser too')
})

t.test('ENVKEEP_PASSWORD_LOGIN=false: no password form, its POST refused; refused at start while nobody can sign in by SSO', async (t) => {
  const s = await setUp(t, { ENVKEEP_PASSWORD_LOGIN: 'false' })
  const login = await s.app.inject({ method: 'GET', url: '/login' })
  t.notMatch(login.body, 'name="password"')
  t.match(login.body, 'Sign in with Test IdP')
  const page = await s.sso('ana-sub')
  t.equal(new URL(page.url()).pathname, '/', 'SSO still signs in')
  await t.rejects(
    buildTestApp(t, {
      env: {
        ENVKEEP_OIDC_ISSUER: 'https://idp.example.com',
        ENVKEEP_OIDC_CLIENT_ID: 'envkeep',
        ENVKEEP_PASSWORD_LOGIN: 'false',
      },
    }),
    /ENVKEEP_PASSWORD_LOGIN=false refused: no account can sign in by single sign-on yet/,
  )
})

t.test("the CLI's login, against a server with SSO and ENVKEEP_PASSWORD_LOGIN=false, completes through the provider", async (t) => {
  const s = await setUp(t, { ENVKEEP_PASSWORD_LOGIN: 'false' })
  const dir = tempDir(t)
  const cli = spawnNode(CLI_BIN, ['login', '--no-browser', '--base-url', s.base], { env: { ENVKEEP_CONFIG_DIR: join(dir, 'config'), HOME: dir } })
  t.teardown(() => {
    if (cli.child.exitCode === null) cli.child.kill('SIGKILL')
  })
  const exited = new Promise<number | null>((resolve) => cli.child.once('exit', (code) => resolve(code)))
  const LINK = /(http:\/\/127\.0\.0\.1:\d+\/oauth\/authorize\?\S+)/
  const link = (await cli.waitFor('stderr', LINK))[1] as string
  const page = await (await (await chromium.launch(CHROMIUM_LAUNCH)).newContext()).newPage()
  t.teardown(() => page.context().browser()?.close())
  await page.goto(link)
  t.equal(new URL(page.url()).pathname, '/login', 'the CLI sends the person to the web login')
  t.equal(await page.locator('input[name="password"]').count(), 0, 'no password form')
  await page.getByRole('link', { name: 'Sign in with Test IdP' }).click()
  await providerLogin(page, 'ana-sub', s.base)
  await page.getByRole('button', { name: 'Allow' }).click()
  t.equal(await exited, 0, `the CLI signed in\n${cli.stderr()}`)
  t.match(cli.stdout() + cli.stderr(), /signed in/i)
})

import t from 'tap'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import * as oauth from 'oauth4webapi'
import { chromium, type Browser, type Page } from 'playwright-core'
import { axeViolations, CHROMIUM_LAUNCH, describeViolations, loopbackCallback, spawnNode } from '@envkeep/test-support'
import { freePort, runCli, tempDir } from './helpers.js'

const BIN = fileURLToPath(new URL('../dist/bin.js', import.meta.url))
const insecure = { [oauth.allowInsecureRequests]: true } as const
const OWNER_PASSWORD = 'canary-owner-password-e2e'
const VIEWER_PASSWORD = 'canary-viewer-password-e2e'
const VALUES = ['first-secret-e2e', 'postgres://db-e2e', 'pushed-secret-e2e', 'rejected-secret-e2e', 'pending-secret-e2e']

t.test('in Chromium against the real server: setup → sign in → vault → variables → CLI consent → push → review (Apply, Reject)', async (t) => {
  const dir = tempDir(t)
  const data = join(dir, 'data')
  const port = await freePort()
  const BASE = `http://127.0.0.1:${port}`
  const server = spawnNode(BIN, ['start', '--data-dir', data, '--port', String(port)], { env: {}, cwd: dir })
  t.teardown(() => {
    if (server.child.exitCode === null) server.child.kill('SIGKILL')
  })
  const setupLink = (await server.waitFor('stderr', /(http:\/\/\S+\/setup\?token=[A-Za-z0-9_-]{43})/))[1] as string

  const browser: Browser = await chromium.launch(CHROMIUM_LAUNCH)
  t.teardown(() => browser.close())
  const context = await browser.newContext({ viewport: { width: 1100, height: 900 } })
  const page: Page = await context.newPage()
  const problems: string[] = []
  page.on('console', (m) => {
    if (m.type() === 'error' || /Content Security Policy|Refused to/i.test(m.text())) problems.push(m.text())
  })
  page.on('pageerror', (e) => problems.push(String(e)))
  page.on('dialog', (d) => void d.accept())

  // the server's own pages pass axe and fit a phone (390 px) as well as 1100 px
  async function fits(name: string): Promise<void> {
    for (const width of [1100, 390]) {
      await page.setViewportSize({ width, height: 900 })
      const bad = await axeViolations(page)
      t.same(bad, [], `${name} at ${width} px: no serious or critical axe violation\n${describeViolations(bad)}`)
      t.ok((await page.evaluate<number>('document.documentElement.scrollWidth')) <= width, `${name} at ${width} px: no horizontal scrolling`)
    }
    await page.setViewportSize({ width: 1100, height: 900 })
  }

  // setup: the first owner
  await page.goto(setupLink)
  await fits('setup')
  await page.getByLabel('Email').fill('olga@example.com')
  await page.getByLabel('Name').fill('Olga Owner')
  t.match(await page.locator('#password-rules').textContent(), /At least 10 characters/, 'the password rules stated next to the field')
  // a typo in the second field: refused, nothing created, both fields asked again
  await page.getByLabel('Password', { exact: true }).fill(OWNER_PASSWORD)
  await page.getByLabel('Password again').fill(`${OWNER_PASSWORD}-typo`)
  await page.getByRole('button', { name: 'Create account' }).click()
  t.match(await page.getByRole('alert').textContent(), /the two passwords are not the same/)
  await fits('setup refused')
  t.equal(await page.getByLabel('Password', { exact: true }).inputValue(), '', 'the password is not sent back')
  await page.getByLabel('Password', { exact: true }).fill(OWNER_PASSWORD)
  await page.getByLabel('Password again').fill(OWNER_PASSWORD)
  await page.getByRole('button', { name: 'Create account' }).click()
  await page.waitForURL(`${BASE}/`)
  t.pass('setup signed the owner in')

  // sign out, sign in
  await page.goto(`${BASE}/logout`)
  await page.getByRole('button', { name: 'Sign out' }).click()
  await page.waitForURL(`${BASE}/login`)
  await fits('login')
  await page.getByLabel('Email').fill('olga@example.com')
  await page.getByLabel('Password').fill('wrong-password-e2e')
  await page.getByRole('button', { name: 'Sign in' }).click()
  t.match(await page.getByRole('alert').textContent(), /the email or the password is wrong/)
  await page.getByLabel('Password').fill(OWNER_PASSWORD)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.waitForURL(`${BASE}/`)

  // create a vault, add variables
  await page.getByLabel('Vault name').fill('Acme')
  await page.getByRole('button', { name: 'Create vault' }).click()
  await page.waitForURL(/\/v\/[0-9a-f-]{36}$/)
  const vaultUrl = page.url()
  const vaultId = vaultUrl.split('/v/')[1]!
  const dev = page.locator('#env-development')
  for (const [name, value] of [
    ['API_KEY', VALUES[0]!],
    ['DB_URL', VALUES[1]!],
  ]) {
    await dev.getByText('Add a variable').click()
    await dev.getByLabel('Name', { exact: true }).fill(name)
    await dev.getByLabel('Value', { exact: true }).fill(value)
    await dev.getByRole('button', { name: 'Add variable' }).click()
    await page.waitForURL(/done=variable_added/)
  }
  t.equal(
    await dev
      .locator('code.name')
      .allTextContents()
      .then((x) => x.join(',')),
    'API_KEY,DB_URL',
  )

  // a CLI sign-in: signed out first, so the sign-in page returns to the consent page
  await page.goto(`${BASE}/logout`)
  await page.getByRole('button', { name: 'Sign out' }).click()
  const issuer = new URL(BASE)
  const as = await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }).then((r) => oauth.processDiscoveryResponse(issuer, r))
  const client: oauth.Client = { client_id: `${BASE}/cli/oauth-client.json` }
  const verifier = oauth.generateRandomCodeVerifier()
  const state = oauth.generateRandomState()
  const cb = await loopbackCallback()
  t.teardown(cb.close)
  const authUrl = new URL(as.authorization_endpoint!)
  authUrl.search = new URLSearchParams({
    response_type: 'code',
    client_id: client.client_id,
    redirect_uri: cb.redirectUri,
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
    resource: `${BASE}/api/env`,
    scope: 'env:read env:push',
  }).toString()
  await page.goto(authUrl.href)
  await page.waitForURL(/\/login\?return_to=/)
  await page.getByLabel('Email').fill('olga@example.com')
  await page.getByLabel('Password').fill(OWNER_PASSWORD)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.waitForURL(/\/oauth\/authorize\?/)
  await page.getByLabel('Allow this sign-in to send .env files').check()
  await page.getByRole('button', { name: 'Allow' }).click()
  const callback = await cb.callback
  const params = oauth.validateAuthResponse(as, client, callback, state)
  const tokenRes = await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, cb.redirectUri, verifier, {
    additionalParameters: { resource: `${BASE}/api/env` },
    ...insecure,
  })
  const tokens = await oauth.processAuthorizationCodeResponse(as, client, tokenRes)
  t.equal(tokens.scope, 'env:read env:push', 'push was allowed on the consent page')

  const push = async (variables: Record<string, string>, refused: { line: number; name: string; reason: string }[] = []) => {
    const res = await fetch(`${BASE}/api/env/${vaultId}/development/imports`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tokens.access_token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ variables, refused }),
    })
    t.equal(res.status, 201)
    return (await res.json()) as { import: string; url: string; overwrites: string[] }
  }

  // a push appears on the vault page; its review shows new / overwrite / refused
  const p1 = await push({ API_KEY: VALUES[2]!, NEW_FLAG: 'on' }, [{ line: 4, name: 'bad-name', reason: 'not a valid name' }])
  t.same(p1.overwrites, ['API_KEY'])
  await page.goto(`${vaultUrl}/pushes`)
  await page.getByRole('link', { name: 'Review' }).click()
  t.equal(page.url(), p1.url, 'the review page is the url the API gave')
  const rows = page.locator('table.names tbody tr')
  t.equal(await rows.filter({ hasText: 'API_KEY' }).locator('.mark').textContent(), 'overwrite')
  t.equal(await rows.filter({ hasText: 'NEW_FLAG' }).locator('.mark').textContent(), 'new')
  t.match(await page.locator('table.refused').textContent(), /4\s*bad-name\s*not a valid name/)
  t.equal(await page.locator('code.value').count(), 0, 'values hidden until revealed')
  await page.getByRole('button', { name: 'Apply' }).click()
  await page.waitForSelector('.outcome-applied')
  t.equal(await page.getByRole('button', { name: 'Apply' }).count(), 0)
  await page.goto(vaultUrl)
  await page.locator('#env-development').getByRole('button', { name: 'Reveal all' }).click()
  t.equal(await page.locator('code.value[data-name="API_KEY"]').textContent(), VALUES[2], 'Apply changed the value')
  t.equal(await page.locator('code.value[data-name="NEW_FLAG"]').textContent(), 'on', 'and added the new one')

  // Reject leaves the variables untouched
  const p2 = await push({ API_KEY: VALUES[3]!, OTHER: 'x' })
  await page.goto(p2.url)
  await page.getByRole('button', { name: 'Reject' }).click()
  await page.waitForSelector('.outcome-rejected')
  await page.goto(vaultUrl)
  await page.locator('#env-development').getByRole('button', { name: 'Reveal all' }).click()
  t.equal(await page.locator('code.value[data-name="API_KEY"]').textContent(), VALUES[2], 'Reject changed nothing')
  t.equal(await page.locator('code.value[data-name="OTHER"]').count(), 0)

  // a viewer (made with the admin commands while the server runs) sees no values and no buttons
  const env = { ENVKEEP_DATA_DIR: data }
  t.equal(
    (await runCli(['admin', 'user', 'create', '--email', 'vic@example.com', '--name', 'Vic Viewer', '--password-stdin'], env, VIEWER_PASSWORD, dir)).code,
    0,
  )
  t.equal((await runCli(['admin', 'member', 'add', '--vault', 'Acme', '--email', 'vic@example.com', '--role', 'viewer'], env, '', dir)).code, 0)
  const p3 = await push({ API_KEY: VALUES[4]! })
  const viewerContext = await browser.newContext()
  const viewer = await viewerContext.newPage()
  await viewer.goto(`${BASE}/login`)
  await viewer.getByLabel('Email').fill('vic@example.com')
  await viewer.getByLabel('Password').fill(VIEWER_PASSWORD)
  await viewer.getByRole('button', { name: 'Sign in' }).click()
  await viewer.waitForURL(`${BASE}/`)
  await viewer.goto(vaultUrl)
  t.equal(await viewer.getByRole('button', { name: /Reveal/ }).count(), 0, 'a viewer gets no Reveal')
  t.equal(await viewer.locator('code.value').count(), 0, 'and sees no value')
  await viewer.goto(p3.url)
  t.equal(await viewer.getByRole('button', { name: 'Apply' }).count(), 0, 'a viewer gets no Apply')
  t.equal(await viewer.getByRole('button', { name: 'Reject' }).count(), 0, 'nor Reject')
  t.notOk((await viewer.content()).includes(VALUES[4]!), 'nor the pushed value')

  // a POST without its CSRF token is refused, even with a valid session
  const cookies = await context.cookies(BASE)
  const session = cookies.find((c) => c.name === 'envkeep_session')!
  const forged = await fetch(`${BASE}/vaults`, {
    method: 'POST',
    headers: { cookie: `envkeep_session=${session.value}`, 'content-type': 'application/x-www-form-urlencoded' },
    body: 'name=Forged',
    redirect: 'manual',
  })
  t.equal(forged.status, 403, 'CSRF-less POST refused')

  // 400 is the refused setup form above, 401 the refused sign-in.
  const known = (p: string) => /status of 40[0134]/.test(p)
  t.same(
    problems.filter((p) => !known(p)),
    [],
    'no CSP violation or script error in the console',
  )

  server.child.kill('SIGTERM')
  t.equal((await server.done).code, 0, 'the server stops cleanly')
  const log = server.stdout()
  for (const v of [...VALUES, OWNER_PASSWORD, VIEWER_PASSWORD, tokens.access_token, tokens.refresh_token!, session.value])
    t.notOk(log.includes(v), 'the server log holds no value, password or token')
})

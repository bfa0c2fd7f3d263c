import t from 'tap'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium, type Browser, type Page } from 'playwright-core'
import { axeViolations, CHROMIUM_LAUNCH, describeViolations, spawnNode } from '@envkeep/test-support'
import { freePort, tempDir } from './helpers.js'

const BIN = fileURLToPath(new URL('../dist/bin.js', import.meta.url))
const OWNER_PASSWORD = 'canary-owner-password-invite-e2e'
const NEW_PASSWORD = 'canary-newcomer-password-e2e'

t.test('in Chromium against the real server: Invite → Invitation link → the invitee chooses a password → member of the vault', async (t) => {
  const dir = tempDir(t)
  const port = await freePort()
  const BASE = `http://127.0.0.1:${port}`
  const server = spawnNode(BIN, ['start', '--data-dir', join(dir, 'data'), '--port', String(port)], { env: {}, cwd: dir })
  t.teardown(() => {
    if (server.child.exitCode === null) server.child.kill('SIGKILL')
  })
  const setupLink = (await server.waitFor('stderr', /(http:\/\/\S+\/setup\?token=[A-Za-z0-9_-]{43})/))[1] as string

  const browser: Browser = await chromium.launch(CHROMIUM_LAUNCH)
  t.teardown(() => browser.close())
  const problems: string[] = []
  const watch = (page: Page) => {
    page.on('console', (m) => {
      if (m.type() === 'error' || /Content Security Policy|Refused to/i.test(m.text())) problems.push(m.text())
    })
    page.on('pageerror', (e) => problems.push(String(e)))
    page.on('dialog', (d) => void d.accept())
    return page
  }
  async function fits(page: Page, name: string): Promise<void> {
    for (const width of [1100, 390]) {
      await page.setViewportSize({ width, height: 900 })
      const bad = await axeViolations(page)
      t.same(bad, [], `${name} at ${width} px: no serious or critical axe violation\n${describeViolations(bad)}`)
      t.ok((await page.evaluate<number>('document.documentElement.scrollWidth')) <= width, `${name} at ${width} px: no horizontal scrolling`)
    }
    await page.setViewportSize({ width: 1100, height: 900 })
  }

  // the owner: setup, a vault
  const owner = watch(await (await browser.newContext({ viewport: { width: 1100, height: 900 } })).newPage())
  await owner.goto(setupLink)
  await owner.getByLabel('Email').fill('olga@example.com')
  await owner.getByLabel('Name').fill('Olga Owner')
  await owner.getByLabel('Password', { exact: true }).fill(OWNER_PASSWORD)
  await owner.getByLabel('Password again').fill(OWNER_PASSWORD)
  await owner.getByRole('button', { name: 'Create account' }).click()
  await owner.waitForURL(`${BASE}/`)
  await owner.getByLabel('Vault name').fill('Acme')
  await owner.getByRole('button', { name: 'Create vault' }).click()
  await owner.waitForURL(/\/v\/[0-9a-f-]{36}$/)
  const vaultUrl = owner.url()

  // the Members tab → Invite, by email and role
  await owner.getByRole('navigation', { name: 'Vault' }).getByRole('link', { name: 'Members' }).click()
  await owner.waitForURL(`${vaultUrl}/members`)
  const members = owner.locator('#members')
  await members.locator('#member-email').fill('nina@example.com')
  await members.locator('#member-role').selectOption('viewer')
  await members.getByRole('button', { name: 'Invite' }).click()
  await owner.waitForLoadState()
  await t.resolveMatch(owner.getByRole('heading', { name: 'Invitation link' }).isVisible(), true)
  const link = (await owner.locator('#invitation-link').textContent()) ?? ''
  t.match(link, new RegExp(`^${BASE}/invite/[A-Za-z0-9_-]{43}$`))
  await t.resolveMatch(owner.getByRole('button', { name: 'Copy the invitation link' }).isVisible(), true, 'with JavaScript: a Copy button')
  t.equal(await owner.locator('#invitation button').count(), 1, 'one button: not the Copy and Hide of revealed values')
  await fits(owner, 'vault page with an invitation link')
  await owner.goto(`${vaultUrl}/members`)
  t.equal(await owner.locator('#invitation-link').count(), 0, 'the link is shown once')
  t.match(await owner.locator('table.invitations').textContent(), /nina@example\.com.*viewer.*Olga Owner/s)

  // the invitee, in another browser
  const nina = watch(await (await browser.newContext({ viewport: { width: 1100, height: 900 } })).newPage())
  await nina.goto(link)
  await t.resolveMatch(nina.getByRole('heading', { name: 'Join Acme' }).isVisible(), true)
  await fits(nina, 'invitation page')
  await nina.getByLabel('Name').fill('Nina Newcomer')
  await nina.getByLabel('Password', { exact: true }).fill(NEW_PASSWORD)
  await nina.getByLabel('Password again').fill(`${NEW_PASSWORD}-typo`)
  await nina.getByRole('button', { name: 'Create account and join' }).click()
  t.match(await nina.getByRole('alert').textContent(), /the two passwords are not the same/)
  await nina.getByLabel('Password', { exact: true }).fill(NEW_PASSWORD)
  await nina.getByLabel('Password again').fill(NEW_PASSWORD)
  await nina.getByRole('button', { name: 'Create account and join' }).click()
  await nina.waitForURL(vaultUrl)
  t.match(await nina.locator('main').textContent(), /Your role: viewer/)
  t.match(await nina.locator('header').textContent(), /Nina Newcomer/, 'signed in')

  // the owner sees the new member; the invitation is gone
  await owner.reload()
  t.match(await owner.locator('#members table').first().textContent(), /Nina Newcomer.*nina@example\.com.*viewer/s)
  t.equal(await owner.locator('table.invitations').count(), 0)

  // the link again: one use
  await nina.goto(link)
  await t.resolveMatch(nina.getByRole('heading', { name: 'This invitation link cannot be used' }).isVisible(), true)

  t.same(
    problems.filter((p) => !/status of 40[049]/.test(p)),
    [],
    'no CSP violation or script error in the console',
  )
  server.child.kill('SIGTERM')
  t.equal((await server.done).code, 0, 'the server stops cleanly')
  const log = server.stdout()
  for (const secret of [OWNER_PASSWORD, NEW_PASSWORD, link.split('/invite/')[1]!]) t.notOk(log.includes(secret), 'no password or token in the log')
})

import t from 'tap'
import { chromium, type Browser, type Page } from 'playwright-core'
import { CHROMIUM_LAUNCH } from '@envkeep/test-support'
import { domainOf } from '../webhooks/helpers.js'
import { build, PEOPLE } from './helpers.js'

declare const navigator: { readonly clipboard: { readText(): Promise<string> } }

// Issue 25 (outside tests, 7), in Chromium: every variable has its own Copy, which copies its
// value without showing it (a logged reveal in the background); History and Settings keep the
// vault's tab bar; no CSP violation. SCREENSHOTS=dir keeps the pages as images to look at.

t.test('Copy of a hidden value, and the tab bar on History and Settings', async (t) => {
  const b = await build(t, { listen: true })
  const domain = domainOf(b)
  const owner = { kind: 'person' as const, personId: PEOPLE.owner!.id, signInId: null, clientId: null, address: null }
  for (const [name, value] of [
    ['API_KEY', 'copy-canary-1'],
    ['DB_URL', 'postgres://copy-canary-2'],
  ])
    await domain.writeVariable(owner, { vaultId: b.vaultId, environment: 'development', name: name!, value: value!, mode: 'add' })
  const browser: Browser = await chromium.launch(CHROMIUM_LAUNCH)
  t.teardown(() => browser.close())
  const context = await browser.newContext({ viewport: { width: 1100, height: 900 } })
  await context.addCookies([{ name: 'test_person', value: PEOPLE.owner!.id, url: b.address }])
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: b.address })
  const page: Page = await context.newPage()
  const problems: string[] = []
  page.on('console', (m) => {
    if (m.type() === 'error' || /Content Security Policy|Refused to/i.test(m.text())) problems.push(m.text())
  })
  page.on('pageerror', (e) => problems.push(String(e)))

  await page.goto(`${b.address}/v/${b.vaultId}?env=development`)
  const row = page.locator('li.var', { hasText: 'DB_URL' })
  const copy = row.getByRole('button', { name: 'Copy the value of DB_URL' })
  await copy.click()
  await row.locator('button[data-reveal-copy]', { hasText: /Copied|failed/ }).waitFor()
  t.equal(await copy.textContent(), 'Copied')
  t.equal(await page.evaluate(() => navigator.clipboard.readText()), 'postgres://copy-canary-2', 'the value is on the clipboard')
  t.equal(await page.locator('code.value').count(), 0, 'and not in the page')
  const [read] = await b.storage.listAccessLog(b.vaultId, { action: 'read', limit: 1 })
  t.same(read?.names, ['DB_URL'], 'the copy was a logged read of that one name')
  if (process.env.SCREENSHOTS) await page.screenshot({ path: `${process.env.SCREENSHOTS}/variables.png`, fullPage: true })

  for (const [path, tab] of [
    [`/v/${b.vaultId}/history/development`, 'History'],
    [`/v/${b.vaultId}/settings`, 'Settings'],
  ] as const) {
    await page.goto(`${b.address}${path}`)
    t.equal(await page.locator('nav.tabs a[aria-current="page"]').textContent(), tab, `${tab}: its tab is current`)
    if (process.env.SCREENSHOTS) await page.screenshot({ path: `${process.env.SCREENSHOTS}/${tab.toLowerCase()}.png`, fullPage: true })
  }
  await page.getByRole('link', { name: 'Webhooks' }).click()
  t.equal(page.url(), `${b.address}/v/${b.vaultId}/webhooks`, 'Webhooks from Settings')
  t.same(problems, [], 'no console error or CSP violation')
})

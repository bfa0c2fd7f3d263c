import t from 'tap'
import { chromium, type Browser, type Page } from 'playwright-core'
import { CHROMIUM_LAUNCH } from '@envkeep/test-support'
import { build, PEOPLE, TTL } from './helpers.js'

/**
 * The browser's `navigator`, as used inside `page.evaluate` (that callback runs
 * in the page). The tests are typed for Node without the DOM lib, so the one
 * part used is declared here; nothing is emitted for it.
 */
declare const navigator: { readonly clipboard: { readText(): Promise<string> } }

t.test('in Chromium: add variables, reveal, review pushes (Apply, Reject, expiry), Copy details; no CSP violation', async (t) => {
  const b = await build(t, { listen: true })
  const address = b.address
  const browser: Browser = await chromium.launch(CHROMIUM_LAUNCH)
  t.teardown(() => browser.close())
  const context = await browser.newContext({ viewport: { width: 1100, height: 900 } })
  await context.addCookies([{ name: 'test_person', value: PEOPLE.owner!.id, url: address }])
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: address })
  const page: Page = await context.newPage()
  const problems: string[] = []
  page.on('console', (m) => {
    if (m.type() === 'error' || /Content Security Policy|Refused to/i.test(m.text())) problems.push(m.text())
  })
  page.on('pageerror', (e) => problems.push(String(e)))
  page.on('dialog', (d) => void d.accept())

  const vaultUrl = `${address}/v/${b.vaultId}`
  await page.goto(`${address}/`)
  await page.getByRole('link', { name: 'Acme' }).click()
  t.equal(page.url(), vaultUrl)

  // add two variables in development through the form
  const dev = page.locator('#env-development')
  for (const [name, value] of [
    ['API_KEY', 'first-secret'],
    ['DB_URL', 'postgres://db'],
  ]) {
    await dev.getByText('Add a variable').click()
    await dev.getByLabel('Name', { exact: true }).fill(name)
    await dev.getByLabel('Value', { exact: true }).fill(value)
    await dev.getByRole('button', { name: 'Add variable' }).click()
    await page.waitForURL(/done=variable_added/)
  }
  t.equal(await page.getByRole('status').textContent(), 'The variable was added.')
  t.equal(
    await dev
      .locator('code.name')
      .allTextContents()
      .then((x) => x.join(',')),
    'API_KEY,DB_URL',
  )
  t.equal(await page.locator('code.value').count(), 0, 'values hidden')

  // reveal one
  await dev.locator('li.var', { hasText: 'API_KEY' }).getByRole('button', { name: 'Reveal' }).click()
  t.equal(await page.locator('#env-development code.value[data-name="API_KEY"]').textContent(), 'first-secret')
  // Copy and Hide beside the revealed value (the script adds them; nothing more is fetched)
  const revealed = page.locator('#env-development code.value[data-name="API_KEY"]')
  await page.getByRole('button', { name: 'Copy the value of API_KEY' }).click()
  t.equal(await page.evaluate(() => navigator.clipboard.readText()), 'first-secret', 'Copy copies the value')
  await page.getByRole('button', { name: 'Hide the value of API_KEY' }).click()
  t.equal(await revealed.isVisible(), false, 'Hide hides it')
  await page.getByRole('button', { name: 'Show the value of API_KEY' }).click()
  t.equal(await revealed.isVisible(), true, 'Show brings it back')
  t.equal(await page.locator('code.value').count(), 1, 'only that one')

  // a push: one overwrite, one new, one refused line
  const applyId = await b.push('development', { API_KEY: 'pushed-secret', NEW_FLAG: 'on' }, [{ line: 4, name: 'bad-name', reason: 'not a valid name' }])
  await page.goto(`${vaultUrl}/pushes`)
  await page.getByRole('link', { name: 'Review' }).click()
  t.equal(page.url(), `${vaultUrl}/variables/imports/${applyId}`)
  const rows = page.locator('table.names tbody tr')
  t.equal(await rows.filter({ hasText: 'API_KEY' }).locator('.mark').textContent(), 'overwrite')
  t.equal(await rows.filter({ hasText: 'NEW_FLAG' }).locator('.mark').textContent(), 'new')
  t.match(await page.locator('table.refused').textContent(), /4\s*bad-name\s*not a valid name/)

  // phone-width screenshot of the review page
  await page.setViewportSize({ width: 390, height: 844 })
  await page.screenshot({ path: '/tmp/envkeep-review-phone.png', fullPage: true })
  await page.setViewportSize({ width: 1100, height: 900 })

  await page.getByRole('button', { name: 'Reveal' }).click()
  t.equal(await page.locator('code.value[data-name="NEW_FLAG"]').textContent(), 'on')
  await page.getByRole('button', { name: 'Apply' }).click()
  await page.waitForSelector('.outcome-applied')
  t.match(await page.locator('.outcome').textContent(), /Applied[\s\S]*by Olga Owner/)
  t.equal(await page.getByRole('button', { name: 'Apply' }).count(), 0)
  t.equal(await page.getByRole('button', { name: 'Reject' }).count(), 0)
  await page.goto(vaultUrl)
  await page.locator('#env-development').getByRole('button', { name: 'Reveal all' }).click()
  t.equal(await page.locator('code.value[data-name="API_KEY"]').textContent(), 'pushed-secret', 'Apply changed the value')
  t.equal(await page.locator('code.value[data-name="NEW_FLAG"]').textContent(), 'on', 'and added the new one')

  // Reject leaves the variables untouched
  const rejectId = await b.push('development', { API_KEY: 'rejected-secret', OTHER: 'x' })
  await page.goto(`${vaultUrl}/variables/imports/${rejectId}`)
  await page.getByRole('button', { name: 'Reject' }).click()
  await page.waitForSelector('.outcome-rejected')
  t.equal(await page.getByRole('button', { name: 'Apply' }).count(), 0)

  // expiry (injected clock) leaves them untouched too, and shows no buttons
  const expireId = await b.push('development', { API_KEY: 'expired-secret' })
  b.clock.now = new Date(b.clock.now.getTime() + TTL + 1)
  await page.goto(`${vaultUrl}/variables/imports/${expireId}`)
  t.match(await page.locator('.outcome').textContent(), /Expired[\s\S]*nobody decided before it expired/)
  t.equal(await page.getByRole('button', { name: 'Apply' }).count(), 0)
  t.equal(await page.getByRole('button', { name: 'Reject' }).count(), 0)

  await page.goto(vaultUrl)
  await page.locator('#env-development').getByRole('button', { name: 'Reveal all' }).click()
  t.equal(await page.locator('code.value[data-name="API_KEY"]').textContent(), 'pushed-secret', 'neither Reject nor expiry changed it')
  t.equal(await page.locator('code.value[data-name="OTHER"]').count(), 0)

  // delete asks for confirmation (script) and works
  await page.locator('#env-development li.var', { hasText: 'NEW_FLAG' }).getByRole('button', { name: 'Delete' }).click()
  await page.waitForURL(/done=variable_deleted/)
  t.equal(await page.locator('#env-development code.name', { hasText: 'NEW_FLAG' }).count(), 0)

  // an error page: Copy details copies the four fields as plain text
  const missing = await page.goto(`${address}/v/00000000-0000-4000-8000-000000000000`)
  t.equal(missing?.status(), 404)
  const copy = page.getByRole('button', { name: 'Copy details' })
  t.ok(await copy.isVisible(), 'the button shows with JavaScript')
  await copy.click()
  const copied = await page.evaluate(() => navigator.clipboard.readText())
  t.match(
    copied,
    /^What: showing vault 00000000\nWhere: database \(only what's shared with you is visible\)\nWhy: this vault does not exist or is not shared with you\nReference: [0-9A-Z]{10}$/,
  )

  t.same(
    problems.filter((p) => !/status of 404/.test(p)),
    [],
    'no CSP violation or script error in the console',
  )
  t.notMatch(b.logs.join('\n'), /first-secret|pushed-secret|rejected-secret|expired-secret/, 'no value in the server log')
})

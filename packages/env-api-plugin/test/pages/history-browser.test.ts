import t from 'tap'
import { chromium } from 'playwright-core'
import { CHROMIUM_LAUNCH } from '@envkeep/test-support'
import { build, PEOPLE } from './helpers.js'

// Issue 12, as a person does it in Chromium: a wrong push applied, then
// vault → History → the change → Revert this change → the confirmation → Revert: values back.

t.test('in Chromium: history → change set → Revert → confirmation → values back', async (t) => {
  const b = await build(t, { listen: true })
  const browser = await chromium.launch(CHROMIUM_LAUNCH)
  t.teardown(() => browser.close())
  const context = await browser.newContext({ viewport: { width: 1100, height: 800 } })
  await context.addCookies([{ name: 'test_person', value: PEOPLE.owner!.id, url: b.address }])
  const page = await context.newPage()
  const problems: string[] = []
  page.on('console', (m) => {
    if (m.type() === 'error' || /Content Security Policy|Refused to/i.test(m.text())) problems.push(m.text())
  })
  page.on('pageerror', (e) => problems.push(String(e)))

  // a good value, then a wrong push applied on its review page
  const steps: Record<string, string>[] = [
    { API_URL: 'https://api.example.com', SECRET: 'canary-good-secret' },
    { API_URL: 'https://wrong.example', EXTRA: 'oops' },
  ]
  for (const values of steps) {
    const id = await b.push('development', values)
    await page.goto(`${b.address}/v/${b.vaultId}/variables/imports/${id}`)
    await page.getByRole('button', { name: 'Apply' }).click()
    await page.waitForURL(`**/imports/${id}`)
  }
  t.same(await b.current('development'), { API_URL: 'https://wrong.example', EXTRA: 'oops', SECRET: 'canary-good-secret' })

  await page.goto(`${b.address}/v/${b.vaultId}`)
  await page.locator('#env-development').getByRole('link', { name: 'History' }).click()
  await page.waitForURL('**/history/development')
  t.equal(await page.locator('h1').textContent(), 'History of development')
  t.equal(await page.locator('table.history tbody tr').count(), 2)
  // the newest change first
  await page.locator('table.history tbody tr').first().getByRole('link').click()
  t.equal(await page.locator('h1').textContent(), 'Change to development')
  t.equal(await page.locator('code.value').count(), 0, 'values hidden')
  await page.getByRole('button', { name: 'Reveal' }).click()
  t.equal(await page.locator('code.value', { hasText: 'https://wrong.example' }).count(), 1)
  await page.getByRole('link', { name: 'Revert this change' }).click()
  t.equal(await page.locator('h1').textContent(), 'Revert this change')
  t.match(await page.locator('section.plan').textContent(), /Will be written \(1\)\s*API_URL\s*Will be deleted \(1\)\s*EXTRA/)
  t.same(await b.current('development'), { API_URL: 'https://wrong.example', EXTRA: 'oops', SECRET: 'canary-good-secret' }, 'nothing yet')
  await page.getByRole('button', { name: 'Revert' }).click()
  await page.waitForURL('**/changes/**')
  t.equal(await page.locator('h1').textContent(), 'Change to development')
  t.match(await page.locator('dl.facts').textContent(), /revert of an earlier change/)
  t.same(await b.current('development'), { API_URL: 'https://api.example.com', SECRET: 'canary-good-secret' }, 'the values are back')
  t.same(problems, [], 'no CSP violation or script error')
})

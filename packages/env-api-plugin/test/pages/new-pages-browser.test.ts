import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { chromium, type Page } from 'playwright-core'
import { axeViolations, CHROMIUM_LAUNCH, describeViolations } from '@envkeep/test-support'
import { build, PEOPLE } from './helpers.js'
import { domainOf, editorActor, ownerActor, receiver } from '../webhooks/helpers.js'

// Issue 14, items 8 and 9, for the pages added since the first round (history, a change set,
// a revert, settings, webhooks, a rejected push): as an owner with data in place, each passes
// axe (no serious or critical violation) in light and dark, fits 390 px without horizontal
// scrolling, and logs no CSP violation or script error. Then Settings → Rename and
// Settings → Delete vault, as a person does them.

const LONG_NAME = 'THIRD_PARTY_PAYMENT_PROVIDER_WEBHOOK_SIGNING_SECRET_FOR_PRODUCTION'
const LONG_VALUE = `canary-${'x9'.repeat(60)}` // one unbroken word, wider than a phone
const REASON = 'The DATABASE_URL points at the staging database; send the production one, and drop DEBUG_SQL before sending again.'

t.test('in Chromium: the new pages pass axe and fit 390 px; Settings renames and deletes the vault', async (t) => {
  const hook = await receiver(t)
  const b = await build(t, { listen: true, plugin: { allowPrivateWebhooks: true, webhookIntervalMs: 50 } })
  const domain = domainOf(b)
  const vault = b.vaultId

  // data in place: a webhook, two applied pushes (history, a change set with a conflict to revert), a rejected one
  await domain.addWebhook(ownerActor, {
    vaultId: vault,
    url: `${hook.url}/envkeep-hook-with-a-rather-long-path/for-phones`,
    format: 'generic',
    events: ['push.created', 'push.decided'],
  })
  const decide = async (variables: Record<string, string>, decision: 'applied' | 'rejected', reason?: string) => {
    const p = await domain.createPush(editorActor, { vaultId: vault, environment: 'development', body: { variables } })
    await domain.decidePush(ownerActor, { vaultId: vault, importId: p.id, decision, ...(reason ? { reason } : {}) })
    return p.id
  }
  await decide({ API_URL: 'https://api.example.com', [LONG_NAME]: LONG_VALUE, SECRET: 'canary-first-secret' }, 'applied')
  await decide({ API_URL: 'https://api-v2.example.com/with/a/long/path/and?query=string&more=values', EXTRA: 'canary-extra' }, 'applied')
  const rejected = await decide({ DATABASE_URL: 'postgres://staging.example/db', DEBUG_SQL: 'canary-debug' }, 'rejected', REASON)
  await hook.waitFor(6) // created and decided, three times: the deliveries are listed
  const [second, first] = await b.storage.listChangeSets(vault, { environment: 'development', limit: 10 })
  t.ok(first && second, 'two change sets in place')

  const browser = await chromium.launch(CHROMIUM_LAUNCH)
  t.teardown(() => browser.close())
  const shots = mkdtempSync(join(tmpdir(), 'envkeep-new-pages-'))
  t.comment(`screenshots in ${shots}`)

  // the check can fail: a page that scrolls sideways and has an unlabelled field is caught
  const probe = await browser.newPage({ viewport: { width: 390, height: 600 } })
  await probe.setContent('<!doctype html><html lang="en"><title>x</title><main><input><pre>' + 'w'.repeat(200) + '</pre></main></html>')
  t.match(
    (await axeViolations(probe)).map((v) => v.id),
    ['label'],
    'axe runs and reports',
  )
  t.ok((await probe.evaluate<number>('document.documentElement.scrollWidth')) > 390, 'overflow is measured')
  await probe.close()

  for (const scheme of ['light', 'dark'] as const) {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, colorScheme: scheme })
    await context.addCookies([{ name: 'test_person', value: PEOPLE.owner!.id, url: b.address }])
    const page = await context.newPage()
    const problems = watch(page)

    /** The page as it is now, at 1280 and 390 px: axe, overflow, a screenshot. */
    async function fits(name: string): Promise<void> {
      for (const width of [1280, 390]) {
        await page.setViewportSize({ width, height: 900 })
        const bad = await axeViolations(page)
        t.same(bad, [], `${name} at ${width} px, ${scheme}: no serious or critical axe violation\n${describeViolations(bad)}`)
        const scroll = await page.evaluate<number>('document.documentElement.scrollWidth')
        t.ok(scroll <= width, `${name} at ${width} px, ${scheme}: no horizontal scrolling (${scroll})`)
        // a short code word in a label (an event, an option) is never split across lines
        const split = await page.evaluate<string[]>(
          "[...document.querySelectorAll('label code')].filter((c) => { const r = document.createRange(); r.selectNodeContents(c); return r.getClientRects().length > 1 }).map((c) => c.textContent)",
        )
        t.same(split, [], `${name} at ${width} px, ${scheme}: no code word in a label split across lines`)
        await page.screenshot({ path: join(shots, `${name}-${width}-${scheme}.png`), fullPage: true })
      }
      await page.setViewportSize({ width: 1280, height: 900 })
    }

    await page.goto(`${b.address}/v/${vault}/history/development`)
    t.equal(await page.locator('h1').textContent(), 'History of development')
    await fits('history')

    await page.goto(`${b.address}/v/${vault}/changes/${first!.id}`)
    await page.getByRole('button', { name: 'Reveal' }).click()
    await page.locator('code.value', { hasText: LONG_VALUE }).waitFor()
    await fits('change-revealed')

    await page.getByRole('link', { name: 'Revert this change' }).click()
    t.equal(await page.locator('h1').textContent(), 'Revert this change')
    t.match(await page.locator('section.plan').textContent(), /Changed again since \(1\)/, 'the conflict form is on the page')
    await fits('revert')

    await page.goto(`${b.address}/v/${vault}/settings`)
    t.equal(await page.locator('h1').textContent(), 'Settings of Acme')
    await fits('settings')

    await page.goto(`${b.address}/v/${vault}/webhooks`)
    t.ok((await page.locator('table.deliveries tbody tr').count()) >= 1, 'deliveries listed')
    await fits('webhooks')

    await page.goto(`${b.address}/v/${vault}/variables/imports/${rejected}`)
    t.equal((await page.locator('.outcome .reason').textContent())?.trim(), `Reason: ${REASON}`)
    await fits('review-rejected')

    t.same(problems, [], `${scheme}: no CSP violation or script error in the console`)
    await context.close()
  }

  // Settings → Rename, then Settings → Delete vault
  const context = await browser.newContext({ viewport: { width: 390, height: 900 } })
  await context.addCookies([{ name: 'test_person', value: PEOPLE.owner!.id, url: b.address }])
  const page = await context.newPage()
  const problems = watch(page)
  page.on('dialog', (d) => void d.accept())
  await page.goto(`${b.address}/v/${vault}`)
  await page.getByRole('link', { name: 'Settings' }).first().click()
  await page.waitForURL('**/settings')
  await page.getByLabel('Name', { exact: true }).fill('Acme Shop')
  await page.getByRole('button', { name: 'Rename' }).click()
  await page.waitForURL('**/settings?done=renamed')
  t.equal(await page.locator('h1').textContent(), 'Settings of Acme Shop', 'the new name shows')
  t.match(await page.getByRole('status').first().textContent(), /The vault was renamed\./)
  t.equal((await b.storage.listVaults(PEOPLE.owner!.id, { vaultId: vault }))[0]?.name, 'Acme Shop', 'stored')

  await page.getByLabel("Type the vault's name").fill('Acme Shop')
  await page.getByRole('button', { name: 'Delete vault' }).click()
  await page.waitForURL(`${b.address}/?done=vault_deleted`)
  t.equal((await page.getByRole('status').textContent())?.trim(), 'The vault was deleted.')
  t.equal(await page.getByRole('link', { name: 'Acme Shop' }).count(), 0, 'no longer listed')
  t.equal((await b.storage.listVaults(PEOPLE.owner!.id, { vaultId: vault }))[0] ?? null, null, 'gone from storage')
  t.same(problems, [], 'no CSP violation or script error while renaming and deleting')

  const log = b.logs.join('\n')
  for (const secret of [LONG_VALUE, 'canary-first-secret', 'canary-extra', 'canary-debug']) t.notOk(log.includes(secret), 'no value in the log')
})

/** Console errors, CSP reports and uncaught errors of a page. */
function watch(page: Page): string[] {
  const problems: string[] = []
  page.on('console', (m) => {
    if (m.type() === 'error' || /Content Security Policy|Refused to/i.test(m.text())) problems.push(m.text())
  })
  page.on('pageerror', (e) => problems.push(String(e)))
  return problems
}

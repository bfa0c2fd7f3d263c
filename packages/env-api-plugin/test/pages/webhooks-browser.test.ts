import { createHmac } from 'node:crypto'
import t from 'tap'
import { chromium } from 'playwright-core'
import { CHROMIUM_LAUNCH } from '@envkeep/test-support'
import { build, PEOPLE } from './helpers.js'
import { attemptsRecorded, domainOf, editorActor, receiver } from '../webhooks/helpers.js'

// Issue 14, item 5, as an owner does it in Chromium: vault → Webhooks → add one (the
// secret shown once) → a push is sent → the delivery is listed as delivered, and the
// receiver got it signed with that secret.

t.test('in Chromium: add a webhook on its page, see a signed delivery listed', async (t) => {
  const hook = await receiver(t)
  const b = await build(t, { listen: true, plugin: { allowPrivateWebhooks: true, webhookIntervalMs: 50 } })
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

  // reached from the vault's Settings (issue 25)
  await page.goto(`${b.address}/v/${b.vaultId}`)
  await page.getByRole('link', { name: 'Settings' }).click()
  await page.getByRole('link', { name: 'Webhooks' }).click()
  await page.waitForURL('**/webhooks')
  t.equal(await page.locator('h1').textContent(), 'Webhooks')
  await page.getByLabel('URL').fill(`${hook.url}/envkeep`)
  await page.getByLabel('Format').selectOption('generic')
  await page.getByRole('button', { name: 'Add webhook' }).click()
  await page.waitForLoadState()
  const secret = (await page.locator('#webhook-secret').textContent()) ?? ''
  t.match(secret, /^whsec_[A-Za-z0-9_-]{43}$/, 'the signing secret is shown')

  const recorded = attemptsRecorded(b.storage, 1)
  const push = await domainOf(b).createPush(editorActor, { vaultId: b.vaultId, environment: 'development', body: { variables: { API_KEY: 'browser-canary' } } })
  const [got] = await hook.waitFor(1)
  t.ok(got, 'the receiver got the delivery')
  const ts = got!.headers['x-envkeep-timestamp'] as string
  t.equal(got!.headers['x-envkeep-signature'], `sha256=${createHmac('sha256', secret).update(`${ts}.${got!.body}`).digest('hex')}`)
  t.equal((JSON.parse(got!.body) as { push: { id: string } }).push.id, push.id)

  await recorded // the attempt is recorded after the answer
  await page.goto(`${b.address}/v/${b.vaultId}/webhooks`)
  const row = page.locator('table.deliveries tbody tr').first()
  t.match(await row.textContent(), /push\.created\s*delivered\s*HTTP 200\s*1/)
  t.equal(await page.locator('#webhook-secret').count(), 0, 'the secret is not shown again')
  t.same(problems, [], 'no CSP violation or script error')
})

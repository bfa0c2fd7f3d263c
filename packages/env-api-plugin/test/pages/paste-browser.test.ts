import t from 'tap'
import { chromium, type Page } from 'playwright-core'
import { axeViolations, CHROMIUM_LAUNCH, describeViolations } from '@envkeep/test-support'
import { testLogEntry, TEST_NO_LIMIT, writeTestValue } from '../../src/testing/index.js'
import { build, PEOPLE } from './helpers.js'

// Issue 14, items 3 and 4, as people do it in Chromium: an owner pastes a .env on production
// → the push's review page, where the sender cannot decide (production requires a second
// person) → another owner reveals it (the changed part of an overwrite marked) and rejects it
// with a reason → the decided page shows the reason. The paste page passes axe and fits 390 px.

const OLD = 'https://old.example.com'
const NEW = 'https://new.example.com'
const FILE = `# production\nAPI_URL=${NEW}\nexport FEATURE_X="on"\nbad-name=nope\n`

function watch(page: Page, problems: string[]): void {
  page.on('console', (m) => {
    if (m.type() === 'error' || /Content Security Policy|Refused to/i.test(m.text())) problems.push(m.text())
  })
  page.on('pageerror', (e) => problems.push(String(e)))
}

t.test('in Chromium: paste a .env on production → second-person rule → reveal with the change marked → reject with a reason', async (t) => {
  const b = await build(t, { listen: true })
  // a current value that the paste overwrites, and a second owner
  for (const v of await b.seal('production', { API_URL: OLD })) {
    await writeTestValue(
      b.storage,
      { vaultId: b.vaultId, environment: 'production', value: v, by: PEOPLE.owner!.id, now: b.clock.now, limit: TEST_NO_LIMIT },
      testLogEntry({ vaultId: b.vaultId, action: 'variable_set', environment: 'production', names: [v.name] }),
    )
  }
  await b.storage.changeMember(
    { kind: 'set', vaultId: b.vaultId, personId: PEOPLE.outsider!.id, role: 'owner' },
    testLogEntry({ vaultId: b.vaultId, action: 'member_added', subject: PEOPLE.outsider!.id, detail: 'owner' }),
  )

  const browser = await chromium.launch(CHROMIUM_LAUNCH)
  t.teardown(() => browser.close())
  const problems: string[] = []
  const paste = `${b.address}/v/${b.vaultId}/paste`

  // the paste page: axe and fit, as it first shows and with a refusal on it
  for (const width of [1280, 390]) {
    const context = await browser.newContext({ viewport: { width, height: 900 } })
    await context.addCookies([{ name: 'test_person', value: PEOPLE.owner!.id, url: b.address }])
    const page = await context.newPage()
    watch(page, problems)
    await page.goto(paste)
    for (const state of ['empty', 'refused'] as const) {
      if (state === 'refused') {
        await page.getByLabel('Contents of the .env file').fill('bad-name=x\nEMPTY=\nnot a line')
        await page.getByRole('button', { name: 'Review as a push' }).click()
        await page.waitForLoadState()
        t.equal(await page.locator('table.refused tbody tr').count(), 3, `${width} px: the refused lines are listed`)
      }
      const bad = await axeViolations(page)
      t.same(bad, [], `paste page (${state}) at ${width} px: no serious or critical axe violation\n${describeViolations(bad)}`)
      const scroll = await page.evaluate<number>('document.documentElement.scrollWidth')
      t.ok(scroll <= width, `paste page (${state}) at ${width} px: no horizontal scrolling (${scroll})`)
    }
    await context.close()
  }
  // the refused paste answers 400, which Chromium reports on the console; anything else is a problem
  const refusedLoads = problems.filter((p) => /^Failed to load resource: the server responded with a status of 400/.test(p))
  t.equal(refusedLoads.length, 2, 'the two refused pastes answered 400')
  problems.splice(0, problems.length, ...problems.filter((p) => !refusedLoads.includes(p)))

  // the owner pastes on production
  const ownerContext = await browser.newContext({ viewport: { width: 1100, height: 800 } })
  await ownerContext.addCookies([{ name: 'test_person', value: PEOPLE.owner!.id, url: b.address }])
  const owner = await ownerContext.newPage()
  watch(owner, problems)
  await owner.goto(paste)
  await owner.getByLabel('Environment').selectOption('production')
  await owner.getByLabel('Contents of the .env file').fill(FILE)
  await owner.getByRole('button', { name: 'Review as a push' }).click()
  await owner.waitForURL('**/variables/imports/**')
  const reviewUrl = owner.url()
  t.equal(await owner.locator('h1').textContent(), 'Review a push')
  t.match(await owner.locator('table.names').textContent(), /API_URL\s*overwrite[\s\S]*FEATURE_X\s*new/)
  t.match(await owner.locator('table.refused').textContent(), /4\s*bad-name\s*bad name/)
  t.equal(await owner.getByRole('button', { name: 'Apply' }).count(), 0, 'the sender is not offered Apply')
  t.match(await owner.locator('main').textContent(), /production requires a second person: someone else with write access must apply or reject your push\./)
  const [push] = await b.storage.listImports(b.vaultId, { limit: 1 })
  t.equal(push?.senderId, PEOPLE.owner!.id)

  // another owner signs in, reveals and rejects with a reason
  const secondContext = await browser.newContext({ viewport: { width: 1100, height: 800 } })
  await secondContext.addCookies([{ name: 'test_person', value: PEOPLE.outsider!.id, url: b.address }])
  const second = await secondContext.newPage()
  watch(second, problems)
  await second.goto(reviewUrl)
  await second.getByRole('button', { name: 'Reveal' }).click()
  await second.waitForLoadState()
  t.equal(await second.locator('code.value[data-name="API_URL"]').textContent(), NEW)
  t.equal(await second.locator('code.value[data-name="API_URL"] mark').textContent(), 'new', 'the changed part of the new value is marked')
  t.equal(await second.locator('code.value[data-current="API_URL"] mark').textContent(), 'old', 'and of the value it replaces')
  await second.getByLabel('Reason (optional, shown with the push)').fill('Use the staging URL first')
  await second.getByRole('button', { name: 'Reject' }).click()
  await second.waitForURL(reviewUrl)
  t.match(await second.locator('.outcome').textContent(), /Rejected/)
  t.equal(await second.locator('.outcome .reason').textContent(), 'Reason: Use the staging URL first')
  await owner.reload()
  t.equal(await owner.locator('.outcome .reason').textContent(), 'Reason: Use the staging URL first', 'the sender sees the reason')
  t.same(await b.current('production'), { API_URL: OLD }, 'nothing was written')
  t.same(problems, [], 'no CSP violation or script error')
})

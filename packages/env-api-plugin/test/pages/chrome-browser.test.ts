import t from 'tap'
import { chromium } from 'playwright-core'
import { CHROMIUM_LAUNCH } from '@envkeep/test-support'
import { mintSignIn } from '../../src/testing/sign-in.js'
import { build, PEOPLE } from './helpers.js'

// Runs in the page (the tests' tsconfig has no DOM library).
declare const getComputedStyle: (el: unknown) => { backgroundColor: string }

t.test('in Chromium: favicon, dark mode from the system, skip link; no CSP violation', async (t) => {
  const b = await build(t, { listen: true })
  const address = b.address
  const browser = await chromium.launch(CHROMIUM_LAUNCH)
  t.teardown(() => browser.close())
  const problems: string[] = []
  async function open(o: { colorScheme: 'light' | 'dark'; timezoneId: string; javaScriptEnabled?: boolean }) {
    const context = await browser.newContext({ ...o, viewport: { width: 1100, height: 800 } })
    await context.addCookies([{ name: 'test_person', value: PEOPLE.owner!.id, url: address }])
    const page = await context.newPage()
    page.on('console', (m) => {
      if (m.type() === 'error' || /Content Security Policy|Refused to/i.test(m.text())) problems.push(m.text())
    })
    page.on('pageerror', (e) => problems.push(String(e)))
    await page.goto(`${address}/sign-ins`)
    return page
  }
  const light = await open({ colorScheme: 'light', timezoneId: 'UTC' })
  const icon = await light.locator('link[rel=icon]').getAttribute('href')
  t.equal(icon, '/assets/favicon.svg')
  const res = await light.request.get(`${address}${icon}`)
  t.equal(res.status(), 200)
  t.match(res.headers()['content-type'], 'image/svg+xml')
  t.match(await res.text(), /^<svg /)
  const dark = await open({ colorScheme: 'dark', timezoneId: 'UTC' })
  const bg = (p: typeof light) => p.locator('html').evaluate((el) => getComputedStyle(el).backgroundColor)
  t.not(await bg(dark), await bg(light), 'the background follows the system colour scheme')

  // the skip link is the first thing the keyboard reaches
  await light.keyboard.press('Tab')
  t.equal(await light.locator(':focus').textContent(), 'Skip to content')
  t.same(problems, [], 'no CSP violation or script error')
})

t.test("in Chromium: <time> shows the person's time zone with JavaScript, UTC without", async (t) => {
  const b = await build(t, { listen: true })
  const address = b.address
  // a sign-in gives the sign-ins page times (created, until)
  await mintSignIn(b.storage, { baseUrl: 'http://127.0.0.1', personId: PEOPLE.owner!.id, scopes: ['env:read'], now: b.clock.now })
  const browser = await chromium.launch(CHROMIUM_LAUNCH)
  t.teardown(() => browser.close())
  const shown: Record<string, string> = {}
  for (const [label, o] of [
    ['tokyo', { timezoneId: 'Asia/Tokyo', locale: 'en-GB' }],
    ['nojs', { timezoneId: 'Asia/Tokyo', locale: 'en-GB', javaScriptEnabled: false }],
  ] as const) {
    const context = await browser.newContext(o)
    await context.addCookies([{ name: 'test_person', value: PEOPLE.owner!.id, url: address }])
    const page = await context.newPage()
    await page.goto(`${address}/sign-ins`)
    const time = page.locator('time[datetime]').first()
    t.ok(await time.count(), 'the sign-ins page shows a time')
    shown[label] = `${await time.getAttribute('datetime')}|${await time.textContent()}`
  }
  const [iso, tokyo] = shown['tokyo']!.split('|') as [string, string]
  const [, nojs] = shown['nojs']!.split('|') as [string, string]
  t.equal(nojs, `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`, 'without JavaScript: UTC')
  const hour = String((new Date(iso).getUTCHours() + 9) % 24).padStart(2, '0')
  t.match(tokyo, new RegExp(`${hour}:${iso.slice(14, 16)}`), 'with JavaScript: the hour in Tokyo')
  t.notMatch(tokyo, 'UTC')
})

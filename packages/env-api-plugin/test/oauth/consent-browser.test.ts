import t from 'tap'
import * as oauth from 'oauth4webapi'
import { chromium } from 'playwright-core'
import { axeViolations, CHROMIUM_LAUNCH, describeViolations, loopbackCallback } from '@envkeep/test-support'
import { authorizeQuery, build, PEOPLE } from './helpers.js'

// Runs in the page (the tests' tsconfig has no DOM library).
declare const getComputedStyle: (el: unknown) => { backgroundColor: string; display: string }

// Chrome applies the consent page's CSP form-action to the redirect after Allow:
// the redirect to the CLI's loopback listener must go through, on IPv4 and IPv6.
for (const host of ['127.0.0.1', '::1'] as const) {
  t.test(`Allow in a real browser reaches a ${host} callback with code, state and iss`, async (t) => {
    const b = await build(t, { listen: true })
    const cb = await loopbackCallback(host)
    t.teardown(cb.close)
    const { query, state } = await authorizeQuery(b, { redirectUri: cb.redirectUri, scope: 'env:read env:push' })
    const browser = await chromium.launch(CHROMIUM_LAUNCH)
    t.teardown(() => browser.close())
    const context = await browser.newContext()
    await context.addCookies([{ name: 'test_person', value: PEOPLE.ada!.id, url: b.base }])
    const page = await context.newPage()
    const problems: string[] = []
    page.on('console', (m) => {
      if (/Content Security Policy|Refused to/i.test(m.text())) problems.push(m.text())
    })
    await page.goto(`${b.base}/oauth/authorize?${query.toString()}`)
    await page.getByLabel('Allow this sign-in to send .env files').check()
    await page.getByRole('button', { name: 'Allow' }).click()
    const url = await Promise.race([
      cb.callback,
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error('the callback was never reached')), 15_000)),
    ])
    const as = { issuer: b.base, authorization_response_iss_parameter_supported: true } as oauth.AuthorizationServer
    const params = oauth.validateAuthResponse(as, { client_id: b.cli }, url.searchParams, state)
    t.ok(params.get('code'), 'a code came back and state and iss check out')
    t.same(problems, [], 'no CSP violation on the way')
  })
}

t.test('consent in a real browser: push asked → box ticked, Deny secondary; not asked → no box; the after pages', async (t) => {
  const b = await build(t, { listen: true })
  const cb = await loopbackCallback('127.0.0.1')
  t.teardown(cb.close)
  const browser = await chromium.launch(CHROMIUM_LAUNCH)
  t.teardown(() => browser.close())
  const context = await browser.newContext()
  await context.addCookies([{ name: 'test_person', value: PEOPLE.ada!.id, url: b.base }])
  const page = await context.newPage()
  const problems: string[] = []
  page.on('console', (m) => {
    if (/Content Security Policy|Refused to/i.test(m.text())) problems.push(m.text())
  })

  const withPush = await authorizeQuery(b, { redirectUri: cb.redirectUri, scope: 'env:read env:push' })
  await page.goto(`${b.base}/oauth/authorize?${withPush.query.toString()}`)
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 900 })
    const bad = await axeViolations(page)
    t.same(bad, [], `consent at ${width} px: no serious or critical axe violation\n${describeViolations(bad)}`)
    t.ok((await page.evaluate<number>('document.documentElement.scrollWidth')) <= width, `consent at ${width} px: no horizontal scrolling`)
  }
  const box = page.getByLabel('Allow this sign-in to send .env files')
  t.equal(await box.isChecked(), true, 'the CLI asked for env:push: ticked')
  await box.uncheck()
  t.equal(await box.isChecked(), false, 'the person may untick it')
  const bg = (name: string) => page.getByRole('button', { name, exact: true }).evaluate((el) => getComputedStyle(el).backgroundColor)
  t.not(await bg('Deny'), await bg('Allow'), 'Allow and Deny do not look the same')

  const readOnly = await authorizeQuery(b, { redirectUri: cb.redirectUri, scope: 'env:read' })
  await page.goto(`${b.base}/oauth/authorize?${readOnly.query.toString()}`)
  t.equal(await page.getByLabel('Allow this sign-in to send .env files').count(), 0, 'no env:push asked: no box')
  await page.getByRole('button', { name: 'Deny' }).click()
  const url = await Promise.race([
    cb.callback,
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error('the callback was never reached')), 15_000)),
  ])
  t.equal(url.searchParams.get('error'), 'access_denied')

  for (const [path, heading] of [
    ['/cli/signed-in', 'The command line is signed in'],
    ['/cli/denied', 'The sign-in was denied'],
  ] as const) {
    await page.goto(`${b.base}${path}`)
    t.equal(await page.getByRole('heading', { level: 1 }).textContent(), heading)
    t.ok(await page.getByText('close this tab').isVisible())
    t.equal(await page.locator('header.top').evaluate((el) => getComputedStyle(el).display), 'flex', 'the stylesheet loaded')
  }
  t.same(problems, [], 'no CSP violation on the way')
})

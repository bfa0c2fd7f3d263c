import t from 'tap'
import * as oauth from 'oauth4webapi'
import { chromium } from 'playwright-core'
import { CHROMIUM_LAUNCH, loopbackCallback } from '@envkeep/test-support'
import { authorizeQuery, build, PEOPLE } from './helpers.js'



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

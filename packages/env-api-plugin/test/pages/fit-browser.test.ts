import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { chromium } from 'playwright-core'
import { axeViolations, CHROMIUM_LAUNCH, describeViolations } from '@envkeep/test-support'
import { build, PEOPLE } from './helpers.js'

/**
 * Every page of the plugin, in Chromium at 1280 and 390 px: no serious or
 * critical axe-core violation, no horizontal scrolling at phone width.
 * Screenshots go to a temp folder (printed) for a person to look at.
 */
t.test('axe and phone width on every page', async (t) => {
  const b = await build(t, { listen: true })
  const pushId = await b.push('development', { API_KEY: 'pushed-value' }, [])
  const address = b.address
  const shots = mkdtempSync(join(tmpdir(), 'envkeep-shots-'))
  t.comment(`screenshots in ${shots}`)
  const browser = await chromium.launch(CHROMIUM_LAUNCH)
  t.teardown(() => browser.close())
  const pages: Record<string, string> = {
    'vault-list': '/',
    vault: `/v/${b.vaultId}`,
    review: `/v/${b.vaultId}/variables/imports/${pushId}`,
    paste: `/v/${b.vaultId}/paste`,
    'vault-pushes': `/v/${b.vaultId}/pushes`,
    'vault-members': `/v/${b.vaultId}/members`,
    'vault-access-log': `/v/${b.vaultId}/access-log`,
    'sign-ins': '/sign-ins',
    'error-404': '/v/00000000-0000-4000-8000-000000000000',
    'cli-signed-in': '/cli/signed-in',
    'cli-denied': '/cli/denied',
  }
  // the check can fail: a page with an unlabelled image and field is caught
  const probe = await browser.newPage()
  await probe.setContent('<!doctype html><html lang="en"><title>x</title><main><img src="a.png"><input></main></html>')
  t.match(
    (await axeViolations(probe)).map((v) => v.id),
    ['image-alt', 'label'],
    'axe runs and reports',
  )
  await probe.close()

  for (const scheme of ['light', 'dark'] as const) {
    for (const width of [1280, 390]) {
      const context = await browser.newContext({ viewport: { width, height: 900 }, colorScheme: scheme })
      await context.addCookies([{ name: 'test_person', value: PEOPLE.owner!.id, url: address }])
      const page = await context.newPage()
      for (const [name, path] of Object.entries(pages)) {
        await page.goto(`${address}${path}`)
        const bad = await axeViolations(page)
        t.same(bad, [], `${name} at ${width} px, ${scheme}: no serious or critical axe violation\n${describeViolations(bad)}`)
        const scroll = await page.evaluate<number>('document.documentElement.scrollWidth')
        t.ok(scroll <= width, `${name} at ${width} px: no horizontal scrolling (${scroll})`)
        await page.screenshot({ path: join(shots, `${name}-${width}-${scheme}.png`), fullPage: true })
      }
      await context.close()
    }
  }
})

import t from 'tap'
import { CliError } from '../src/errors.js'
import { EXIT } from '../src/exit-codes.js'
import { listenForCallback, normalizeBaseUrl } from '../src/oauth.js'

t.test('base URLs: normalised; plain http only to this machine unless allowed', async (t) => {
  const ok: Array<[string, boolean, string]> = [
    ['https://envkeep.example.com/', false, 'https://envkeep.example.com'],
    ['https://example.com/envkeep//', false, 'https://example.com/envkeep'],
    ['http://127.0.0.1:8080', false, 'http://127.0.0.1:8080'],
    ['http://localhost:8080/', false, 'http://localhost:8080'],
    ['http://[::1]:8080', false, 'http://[::1]:8080'],
    ['http://127.1.2.3:8080', false, 'http://127.1.2.3:8080'],
    ['http://10.0.0.5:8080', true, 'http://10.0.0.5:8080'],
  ]
  for (const [input, allowHttp, want] of ok) t.equal(normalizeBaseUrl(input, allowHttp), want, input)
  const bad = [
    'envkeep.example.com',
    'ftp://x',
    'https://x/?a=1',
    'https://x/#f',
    'https://u:p@x',
    'http://10.0.0.5:8080',
    'http://127.0.0.1.nip.io:8080',
    'http://127.evil.example',
  ]
  for (const input of bad) {
    try {
      normalizeBaseUrl(input, false)
      t.fail(input)
    } catch (err) {
      t.ok(err instanceof CliError && err.exitCode === EXIT.usage, input)
    }
  }
})

t.test('the loopback listener: /callback with our state only; anything else is a 400 and ignored', async (t) => {
  const l = await listenForCallback('our-state', 10_000)
  t.teardown(() => l.close())
  t.match(l.redirectUri, /^http:\/\/(127\.0\.0\.1|\[::1\]):\d+\/callback$/)
  const base = l.redirectUri.replace(/\/callback$/, '')
  for (const path of ['/callback?state=other&code=x', '/callback?code=x', '/elsewhere?state=our-state', '/']) {
    const res = await fetch(base + path)
    t.equal(res.status, 400, path)
    await res.text()
  }
  const res = await fetch(`${base}/callback?state=our-state&code=abc&iss=x`)
  t.equal(res.status, 200)
  t.equal(res.headers.get('content-security-policy'), "default-src 'none'")
  t.notMatch(await res.text(), 'abc', 'the page does not echo the answer')
  const url = await l.callback
  t.equal(url.searchParams.get('code'), 'abc')
})

t.test('with the service base URL, the loopback listener sends the browser to its signed-in or denied page', async (t) => {
  for (const [query, want] of [
    ['code=abc&iss=x', 'https://vault.example/team/cli/signed-in'],
    ['error=access_denied&iss=x', 'https://vault.example/team/cli/denied'],
  ] as const) {
    const l = await listenForCallback('st', 10_000, 'https://vault.example/team')
    t.teardown(() => l.close())
    const res = await fetch(`${l.redirectUri}?state=st&${query}`, { redirect: 'manual' })
    t.equal(res.status, 303, query)
    t.equal(res.headers.get('location'), want, 'nothing from the answer in the URL')
    await res.text()
    t.ok((await l.callback).searchParams.get('iss'), 'the answer still reaches the CLI')
  }
  const l = await listenForCallback('st', 10_000, 'https://vault.example')
  t.teardown(() => l.close())
  const res = await fetch(`${l.redirectUri}?state=st&error=server_error`, { redirect: 'manual' })
  t.equal(res.status, 200, 'another error: the plain page, not "denied"')
  await res.text()
})

t.test('the loopback listener gives up after its time, saying to run login again', async (t) => {
  const l = await listenForCallback('s', 30)
  t.teardown(() => l.close())
  await t.rejects(l.callback, /no sign-in arrived/)
})

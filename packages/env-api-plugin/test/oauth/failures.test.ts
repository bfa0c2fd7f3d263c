import t from 'tap'
import { StorageError } from '../../src/index.js'
import { authorizeQuery, build, cookiesOf, failing, obtainCode, parseConsentForm, PEOPLE, tokenRequest } from './helpers.js'

const BASE = 'https://envkeep.example'

t.test('a database failure at consent: a 500 page with a ref, no redirect, no detail', async (t) => {
  const b = await build(t, { baseUrl: BASE, wrapStorage: failing('saveAuthorizationCode', () => new Error('canary-low-level-detail')) })
  const { query } = await authorizeQuery(b)
  const cookie = `test_person=${PEOPLE.ada!.id}`
  const page = await b.app.inject({ method: 'GET', url: `/oauth/authorize?${query}`, headers: { cookie } })
  const form = parseConsentForm(page.body)
  const res = await b.app.inject({
    method: 'POST',
    url: form.action,
    headers: { cookie: `${cookie}; ${cookiesOf(page.headers['set-cookie'])}`, 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ ...form.fields, decision: 'allow' }).toString(),
  })
  t.equal(res.statusCode, 500)
  t.notOk(res.headers.location)
  t.match(res.headers['content-type'], /^text\/html/)
  t.notMatch(res.body, 'canary-low-level-detail')
  const ref = /<code>([0-9A-Z]{10})<\/code>/.exec(res.body)?.[1]
  t.ok(ref)
  t.ok(
    b.logs.some((l) => l.includes(ref!) && l.includes('"level":50')),
    'the ref finds an error record in the log',
  )
})

t.test('a database failure at the token endpoint: server_error in OAuth shape, status from the SQLSTATE', async (t) => {
  const cases: [string, () => unknown, number][] = [
    ['a bug', () => new Error('canary-low-level-detail'), 500],
    ['a lock timeout', () => new StorageError('55P03', 'sign_ins'), 504],
    ['a broken connection', () => new StorageError('08006'), 503],
  ]
  for (const [name, fail, status] of cases) {
    const b = await build(t, { baseUrl: BASE, wrapStorage: failing('exchangeAuthorizationCode', fail) })
    const c = await obtainCode(b)
    const res = await tokenRequest(b, {
      grant_type: 'authorization_code',
      code: c.code,
      code_verifier: c.verifier,
      redirect_uri: c.redirectUri,
      client_id: `${BASE}/cli/oauth-client.json`,
      resource: `${BASE}/api/env`,
    })
    t.test(name, async (t) => {
      t.equal(res.statusCode, status)
      t.match(res.json(), { error: 'server_error', where: 'OAuth', ref: /^[0-9A-Z]{10}$/ })
      t.equal(res.headers['cache-control'], 'no-store')
      t.notMatch(res.body, 'canary')
      t.notMatch(res.body, 'sign_ins')
    })
  }
})

t.test('a database failure at revocation is not hidden behind the 200', async (t) => {
  const b = await build(t, { baseUrl: BASE, wrapStorage: failing('revokeSignIns', () => new StorageError('08006')) })
  const res = await b.app.inject({
    method: 'POST',
    url: '/oauth/revoke',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: `token=ekrt_x&client_id=${encodeURIComponent(`${BASE}/cli/oauth-client.json`)}`,
  })
  t.equal(res.statusCode, 503, 'the client learns to retry: nothing was revoked')
  t.match(res.json(), { error: 'server_error', where: 'OAuth' })
})

import t from 'tap'
import { BASE_URL, build, expectError, WWW_AUTHENTICATE } from './helpers.js'

const INVALID = ['invalid_token', 'env API'] as const

t.test('401 invalid_token with the exact WWW-Authenticate for every bad credential', async (t) => {
  const b = await build(t)
  const good = await b.signIn('alice')
  const otherClient = await b.signIn('alice', { clientId: `${BASE_URL}/mcp/client.json` })
  const otherResource = await b.signIn('alice', { resource: `${BASE_URL}/mcp` })
  const noRead = await b.signIn('alice', { scopes: ['env:push'] })
  const expired = await b.signIn('alice', { tokenTtlMs: 1000 })
  const revoked = await b.signIn('alice')
  t.same(await b.storage.revokeSignIns({ tokenHash: sha(revoked), clientId: `${BASE_URL}/cli/oauth-client.json` }, b.clock.now), { ok: true, value: 1 })
  b.clock.now = new Date(b.clock.now.getTime() + 2000)

  const cases: Array<[string, Record<string, string | string[]>, string]> = [
    ['missing', {}, '/api/env/vaults'],
    ['empty bearer', { authorization: 'Bearer ' }, '/api/env/vaults'],
    ['malformed', { authorization: 'Bearer a b c' }, '/api/env/vaults'],
    ['unknown token', { authorization: 'Bearer ekat_unknownunknownunknown' }, '/api/env/vaults'],
    ['expired token', { authorization: `Bearer ${expired}` }, '/api/env/vaults'],
    ['revoked sign-in', { authorization: `Bearer ${revoked}` }, '/api/env/vaults'],
    ['token of another client', { authorization: `Bearer ${otherClient}` }, '/api/env/vaults'],
    ['token for another resource', { authorization: `Bearer ${otherResource}` }, '/api/env/vaults'],
    ['token without env:read', { authorization: `Bearer ${noRead}` }, '/api/env/vaults'],
    ['Basic', { authorization: `Basic ${Buffer.from(`alice:${good}`).toString('base64')}` }, '/api/env/vaults'],
    ['other scheme', { authorization: `Token ${good}` }, '/api/env/vaults'],
    ['DPoP scheme', { authorization: `DPoP ${good}` }, '/api/env/vaults'],
    ['token in query', {}, `/api/env/vaults?access_token=${good}`],
    ['header and query', { authorization: `Bearer ${good}` }, `/api/env/vaults?access_token=${good}`],
    ['cookie only', { cookie: `access_token=${good}; session=${good}` }, '/api/env/vaults'],
    ['huge token', { authorization: `Bearer ${'a'.repeat(10_000)}` }, '/api/env/vaults'],
  ]
  for (const [name, headers, url] of cases) {
    const res = await b.app.inject({ method: 'GET', url, headers })
    t.test(name, async (t) => {
      expectError(t, res, 401, ...INVALID, { secrets: [good, expired, revoked, otherClient, otherResource, noRead] })
      t.equal(res.headers['www-authenticate'], WWW_AUTHENTICATE)
    })
  }

  t.test('two Authorization headers', async (t) => {
    const res = await b.app.inject({
      method: 'GET',
      url: '/api/env/vaults',
      headers: { authorization: [`Bearer ${good}`, `Bearer ${good}`] as unknown as string },
    })
    expectError(t, res, 401, ...INVALID, { secrets: [good] })
    t.equal(res.headers['www-authenticate'], WWW_AUTHENTICATE)
  })

  t.test('every route asks for the token', async (t) => {
    const vid = '3f2a9c1e-1111-4111-8111-111111111111'
    for (const [method, url] of [
      ['GET', '/api/env/vaults'],
      ['GET', `/api/env/${vid}/development`],
      ['POST', `/api/env/${vid}/development/imports`],
      ['GET', `/api/env/imports/${vid}`],
    ] as const) {
      const res = await b.app.inject({ method, url, headers: { 'content-type': 'application/json' }, payload: method === 'POST' ? '{}' : undefined })
      expectError(t, res, 401, ...INVALID)
      t.equal(res.headers['www-authenticate'], WWW_AUTHENTICATE, `${method} ${url}`)
    }
  })
})

t.test('the scheme is case-insensitive and a good token passes', async (t) => {
  const b = await build(t)
  const token = await b.signIn('alice')
  for (const scheme of ['Bearer', 'bearer', 'BEARER', 'bEaReR']) {
    const res = await b.app.inject({ method: 'GET', url: '/api/env/vaults', headers: { authorization: `${scheme} ${token}` } })
    t.equal(res.statusCode, 200, scheme)
  }
})

t.test('an idle sign-in ends', async (t) => {
  const b = await build(t, { extra: { signInIdleMs: 60_000 } })
  const token = await b.signIn('alice')
  t.equal((await b.get('/api/env/vaults', token)).statusCode, 200)
  b.clock.now = new Date(b.clock.now.getTime() + 5 * 60_000)
  const res = await b.get('/api/env/vaults', token)
  expectError(t, res, 401, ...INVALID, { secrets: [token] })
})

t.test('no token reaches the log', async (t) => {
  const b = await build(t)
  const token = await b.signIn('alice')
  await b.get('/api/env/vaults', token)
  await b.app.inject({ method: 'GET', url: '/api/env/vaults', headers: { authorization: `Basic ${token}` } })
  t.ok(b.logs.length > 0)
  t.notOk(
    b.logs.some((l) => l.includes(token)),
    'token not in any log line',
  )
})

function sha(s: string): string {
  return createHash('sha256').update(s).digest('hex')
}
import { createHash } from 'node:crypto'

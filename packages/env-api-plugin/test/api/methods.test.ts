import t from 'tap'
import { build, expectError } from './helpers.js'

const V = '3f2a9c1e-1111-4111-8111-111111111111'
const PATHS: Array<[string, string]> = [
  ['/api/env/vaults', 'GET, HEAD'],
  [`/api/env/${V}/development`, 'GET, HEAD'],
  [`/api/env/${V}/development/imports`, 'POST'],
  [`/api/env/imports/${V}`, 'GET, HEAD'],
]
const ALL = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE', 'QUERY', 'PROPFIND', 'MKCOL', 'COPY', 'MOVE', 'LOCK', 'SEARCH', 'CONNECT']

t.test('405 method_not_allowed with Allow for every unlisted method on every path', async (t) => {
  const b = await build(t)
  const token = await b.signIn('alice')
  for (const [url, allow] of PATHS) {
    for (const method of ALL.filter((m) => !allow.split(', ').includes(m))) {
      for (const auth of [token, null]) {
        const res = await b.app.inject({
          method: method as 'GET',
          url,
          headers: { ...(auth ? { authorization: `Bearer ${auth}` } : {}), 'content-type': 'application/json' },
          payload: method === 'TRACE' || method === 'CONNECT' ? undefined : '{"variables":{"A":"canary-405"}}',
        })
        t.test(`${method} ${url}${auth ? '' : ' (no token)'}`, async (t) => {
          if (method === 'HEAD') {
            t.equal(res.statusCode, 405)
            t.equal(res.headers['cache-control'], 'no-store, private')
            t.equal(res.body, '', 'HEAD has no body')
          } else expectError(t, res, 405, 'method_not_allowed', 'env API', { secrets: ['canary-405', token] })
          t.equal(res.headers.allow, allow)
        })
      }
    }
  }
})

t.test('unknown paths under /api/env are 404 not_found JSON', async (t) => {
  const b = await build(t)
  const token = await b.signIn('alice')
  for (const url of ['/api/env', '/api/env/', '/api/env/a/b/c/d', `/api/env/${V}/development/imports/x`, '/api/env/vaults/x/y', '/api/env/imports']) {
    for (const method of ['GET', 'POST']) {
      const res = await b.app.inject({ method: method as 'GET', url, headers: { authorization: `Bearer ${token}` } })
      t.test(`${method} ${url}`, async (t) => expectError(t, res, 404, 'not_found', "database (only what's shared with you is visible)"))
    }
  }
})

t.test('paths outside /api/env are left to the host', async (t) => {
  const b = await build(t)
  const res = await b.app.inject({ method: 'GET', url: '/somewhere-else' })
  t.equal(res.statusCode, 404)
  t.not(res.headers['cache-control'], 'no-store, private')
})

t.test('unknown paths answer before the body is read', async (t) => {
  const b = await build(t)
  for (const [type, payload] of [
    ['text/plain', 'canary-404'],
    ['application/json', `{"a":"canary-404${'x'.repeat(2_000_000)}"}`],
    ['application/json', '{not json canary-404'],
  ] as const) {
    const res = await b.app.inject({ method: 'POST', url: '/api/env/a/b/c/d', headers: { 'content-type': type }, payload })
    expectError(t, res, 404, 'not_found', "database (only what's shared with you is visible)", { secrets: ['canary-404'] })
  }
})

t.test("a host's CORS headers never reach an API answer", async (t) => {
  const b = await build(t, {
    host: (app) => {
      app.addHook('onRequest', async (_request, reply) => {
        reply.header('access-control-allow-origin', '*')
        reply.header('Access-Control-Allow-Credentials', 'true')
      })
    },
  })
  const token = await b.signIn('alice')
  for (const [method, url, auth] of [
    ['GET', '/api/env/vaults', token],
    ['GET', '/api/env/vaults', null],
    ['OPTIONS', '/api/env/vaults', null],
    ['GET', '/api/env/nowhere/x/y/z', null],
  ] as const) {
    const res = await b.app.inject({ method, url, headers: auth ? { authorization: `Bearer ${auth}` } : {} })
    t.notOk(
      Object.keys(res.headers).some((h) => h.startsWith('access-control-')),
      `${method} ${url} ${res.statusCode}`,
    )
    t.equal(res.headers['cache-control'], 'no-store, private')
  }
  const outside = await b.app.inject({ method: 'GET', url: '/elsewhere' })
  t.equal(outside.headers['access-control-allow-origin'], '*', "the host's own routes keep their headers")
})

import Fastify from 'fastify'
import t from 'tap'
import type { errors } from '../../src/errors.js'
import { collectDeclaredPaths, matchDeclaredPath, notAllowedRoutes, resourcePhrase } from '../../src/routes/api/not-allowed.js'

// Issue 10, item 10: each API route is declared once; the 405 answers (and the matching of
// methods the router does not know) are derived from the declarations, not from a second table.

t.test('a declared route gets its 405s and its shape from its own declaration', async (t) => {
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(
    async (api) => {
      const declared = collectDeclaredPaths(api, '/api/env')
      api.setErrorHandler((err, _request, reply) => {
        const e = err as ReturnType<typeof errors.methodNotAllowed>
        return reply
          .code(e.status ?? 500)
          .headers(e.headers ?? {})
          .send({ error: e.code, message: e.reason, where: e.where, ref: 'TESTREF' })
      })
      api.get('/things/:thing', { config: { envkeepResource: (p) => `the thing ${p.thing}` } }, async () => ({ ok: true }))
      api.post('/things/:thing/parts', { config: { envkeepResource: () => 'the parts' } }, async () => ({ ok: true }))
      api.get('/internal', async () => ({ ok: true })) // no resource: not an API path of the table
      notAllowedRoutes(api, declared.paths)
      t.same(
        declared.paths.map((p) => [p.url, p.allow.join(', '), p.shape.join('/')]),
        [
          ['/things/:thing', 'GET, HEAD', 'things/*'],
          ['/things/:thing/parts', 'POST', 'things/*/parts'],
        ],
      )
      const m = matchDeclaredPath(declared.paths, '/things/42/parts')
      t.equal(m?.path.url, '/things/:thing/parts')
      t.equal(resourcePhrase(declared.paths[0]!, ['things', '42']), 'using the thing 42')
      t.equal(matchDeclaredPath(declared.paths, '/things'), null)
      t.equal(matchDeclaredPath(declared.paths, '/things//parts'), null)
    },
    { prefix: '/api/env' },
  )
  const del = await app.inject({ method: 'DELETE', url: '/api/env/things/42' })
  t.equal(del.statusCode, 405, del.body)
  t.equal(del.headers.allow, 'GET, HEAD')
  const get = await app.inject({ method: 'GET', url: '/api/env/things/42/parts' })
  t.equal(get.statusCode, 405)
  t.equal(get.headers.allow, 'POST')
  t.equal((await app.inject({ method: 'GET', url: '/api/env/things/42' })).statusCode, 200)
})

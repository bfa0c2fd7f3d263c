import t from 'tap'
import { build, expectApi, expectError } from './helpers.js'

t.test('GET /api/env/vaults lists vaults with the environments each role may read', async (t) => {
  const b = await build(t)
  const v1 = await b.createVault('alice', { name: 'alpha', members: { bob: 'editor', carol: 'viewer' } })
  const v2 = await b.createVault('bob', { name: 'beta' })
  await b.createVault('dave', { name: 'gamma' })

  const cases: Array<[string, Array<{ id: string; name: string; role: string; environments: string[] }>]> = [
    ['alice', [{ id: v1, name: 'alpha', role: 'owner', environments: ['development', 'preview', 'production'] }]],
    [
      'bob',
      [
        { id: v1, name: 'alpha', role: 'editor', environments: ['development', 'preview'] },
        { id: v2, name: 'beta', role: 'owner', environments: ['development', 'preview', 'production'] },
      ],
    ],
    ['carol', [{ id: v1, name: 'alpha', role: 'viewer', environments: [] }]],
    ['erin', []],
  ]
  for (const [person, vaults] of cases) {
    const res = await b.get('/api/env/vaults', await b.signIn(person))
    t.equal(res.statusCode, 200, person)
    expectApi(t, res)
    t.same(res.json(), { vaults }, person)
  }
})

t.test('the vault list is not written to the access log', async (t) => {
  const b = await build(t)
  const v = await b.createVault('alice')
  const token = await b.signIn('alice')
  t.equal((await b.get('/api/env/vaults', token)).statusCode, 200)
  const log = await b.storage.listAccessLog(v, { limit: 100 })
  t.same(
    log.filter((e) => e.action === 'read' || e.action === 'refused'),
    [],
  )
})

t.test('HEAD answers like GET without a body', async (t) => {
  const b = await build(t)
  const res = await b.app.inject({ method: 'HEAD', url: '/api/env/vaults', headers: { authorization: `Bearer ${await b.signIn('alice')}` } })
  t.equal(res.statusCode, 200)
  t.equal(res.body, '')
  t.equal(res.headers['cache-control'], 'no-store, private')
})

t.test('a database failure while listing is a server_error, nothing of the row on the wire', async (t) => {
  const { StorageError } = await import('../../src/index.js')
  const { failing } = await import('./helpers.js')
  const b = await build(t, { wrapStorage: failing('listVaults', () => new StorageError('08006', 'vaults')) })
  const res = await b.get('/api/env/vaults', await b.signIn('alice'))
  expectError(t, res, 503, 'server_error', 'env API: database', { message: /^listing vaults: 08006 connection failure/ })
})

t.test('a database failure while checking the token is a server_error, not a 401', async (t) => {
  const { StorageError } = await import('../../src/index.js')
  const { failing } = await import('./helpers.js')
  const b = await build(t, { wrapStorage: failing('findToken', () => new StorageError('57014', 'access_tokens')) })
  const token = await b.signIn('alice')
  const res = await b.get('/api/env/vaults', token)
  expectError(t, res, 504, 'server_error', 'env API: database', { secrets: [token], message: /^listing vaults: 57014 statement timeout \(access_tokens\)$/ })
  t.equal(res.headers['www-authenticate'], undefined)
})

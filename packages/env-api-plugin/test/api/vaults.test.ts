import t from 'tap'
import { testLogEntry } from '../../src/testing/index.js'
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

// Issue 20: the answer's bytes are made once per list the core holds (cache/held-lists.ts): the
// same bytes as long as nothing changes, and every change in the very next answer.
t.test('a repeated list answers the same bytes, and a change shows in the next answer', async (t) => {
  const b = await build(t)
  const v = await b.createVault('alice', { name: 'alpha', members: { bob: 'editor' } })
  const token = await b.signIn('bob')
  const list = async () => {
    const res = await b.get('/api/env/vaults', token)
    t.equal(res.statusCode, 200)
    expectApi(t, res)
    t.equal(res.headers['content-length'], String(Buffer.byteLength(res.body)))
    return res.body
  }
  const expected = (name: string, role: string, environments: string[]) => JSON.stringify({ vaults: [{ id: v, name, role, environments }] })

  t.equal(await list(), expected('alpha', 'editor', ['development', 'preview']))
  t.equal(await list(), expected('alpha', 'editor', ['development', 'preview']), 'the same bytes again')
  const log = (action: 'member_changed' | 'member_removed' | 'vault_renamed' | 'environment_changed') => testLogEntry({ vaultId: v, action })
  await b.storage.changeMember({ kind: 'set', vaultId: v, personId: 'bob', role: 'owner' }, log('member_changed'))
  t.equal(await list(), expected('alpha', 'owner', ['development', 'preview', 'production']), 'a role change')
  await b.storage.changeVault({ kind: 'rename', vaultId: v, name: 'alpha-2' }, log('vault_renamed'))
  t.equal(await list(), expected('alpha-2', 'owner', ['development', 'preview', 'production']), 'a rename')
  await b.storage.changeMember({ kind: 'set', vaultId: v, personId: 'bob', role: 'editor' }, log('member_changed'))
  await b.storage.changeVault({ kind: 'environment_rules', vaultId: v, environment: 'preview', ownersOnly: true }, log('environment_changed'))
  t.equal(await list(), expected('alpha-2', 'editor', ['development']), 'an environment made owners-only')
  await b.storage.changeMember({ kind: 'remove', vaultId: v, personId: 'bob' }, log('member_removed'))
  t.equal(await list(), JSON.stringify({ vaults: [] }), 'no longer a member')
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

import t from 'tap'
import { createMemoryStorage } from '../../src/testing/index.js'
import { createTestKeyring } from '../../src/testing/keyring.js'
import { build, expectError, tamper } from '../api/helpers.js'

const CANARY = 'CANARY-plaintext-9e4b2a71c3'

// That the SQLite file (WAL included) never holds a plaintext value is tested where SQLite is:
// packages/server/test/at-rest.test.ts.

t.test('a wrong master key fails with decrypt_failed, not a crash; the right one still opens', async (t) => {
  const storage = createMemoryStorage() // the same data, reopened under each key
  t.teardown(() => storage.close())
  const first = await build(t, { storage, keyring: createTestKeyring('the right key') })
  const v = await first.createVault('alice')
  await first.setValues(v, 'development', { A: CANARY })
  await first.app.close()

  const wrong = await build(t, { storage, keyring: createTestKeyring('a wrong key') })
  const res = await wrong.get(`/api/env/${v}/development`, await wrong.signIn('alice'))
  expectError(t, res, 500, 'decrypt_failed', 'encryption', { vault: v, secrets: [CANARY] })
  const push = await wrong.push(v, 'development', await wrong.signIn('alice'), { variables: { B: CANARY } })
  expectError(t, push, 500, 'decrypt_failed', 'encryption', { vault: v, secrets: [CANARY] })
  t.equal((await wrong.get('/api/env/vaults', await wrong.signIn('alice'))).statusCode, 200, 'the server keeps working')
  await wrong.app.close()

  const right = await build(t, { storage, keyring: createTestKeyring('the right key') })
  const ok = await right.get(`/api/env/${v}/development`, await right.signIn('alice'))
  t.same(ok.json().variables, { A: CANARY })
})

t.test('each vault has its own data key; values do not open under another vault', async (t) => {
  const b = await build(t)
  const v1 = await b.createVault('alice')
  const v2 = await b.createVault('alice')
  await b.setValues(v1, 'development', { A: CANARY })
  await b.setValues(v2, 'development', { B: 'other' })
  const k1 = await b.storage.getWrappedKey(v1)
  const k2 = await b.storage.getWrappedKey(v2)
  t.ok(k1 && k2 && !Buffer.from(k1).equals(Buffer.from(k2)), 'two wrapped keys')
  const sealed = (await b.storage.readCurrent(v1, 'development', { names: ['A'] })).variables[0]!.sealed
  await tamper.setSealed(b.storage, v2, 'B', sealed)
  const res = await b.get(`/api/env/${v2}/development`, await b.signIn('alice'))
  expectError(t, res, 500, 'decrypt_failed', 'encryption', { secrets: [CANARY] })
})

import t from 'tap'
import type { Storage } from '../../src/index.js'
import { breakLogWrites } from '../storage-under-test.js'
import { StorageError } from '../../src/index.js'
import { build, expectApi, expectError, failing, tamper } from './helpers.js'

const CANARY = 'canary-value-7f3e1d9b'
const NOT_FOUND = ['not_found', "database (only what's shared with you is visible)"] as const

t.test('GET /api/env/:vault/:environment returns every value, decrypted, in name order, logged with names first', async (t) => {
  const b = await build(t)
  const v = await b.createVault('alice', { members: { bob: 'editor' } })
  await b.setValues(v, 'development', { ZED: 'last', API_KEY: CANARY, _under: 'u', b_lower: 'ü ✓ multi-byte' })
  await b.setValues(v, 'preview', { OTHER: 'not here' })
  for (const person of ['alice', 'bob']) {
    const res = await b.get(`/api/env/${v}/development`, await b.signIn(person))
    t.equal(res.statusCode, 200, person)
    expectApi(t, res)
    const body = res.json()
    t.same(body, { vault: v, environment: 'development', variables: { API_KEY: CANARY, ZED: 'last', _under: 'u', b_lower: 'ü ✓ multi-byte' } })
    t.same(Object.keys(body.variables), ['API_KEY', 'ZED', '_under', 'b_lower'], 'name order')
  }
  const reads = (await b.storage.listAccessLog(v, { action: 'read', limit: 10 })).reverse()
  t.equal(reads.length, 2)
  t.same(
    reads.map((r) => r.personId),
    ['alice', 'bob'],
  )
  t.same(reads[0]?.names, ['API_KEY', 'ZED', '_under', 'b_lower'], 'the log names what was read')
  t.equal(reads[0]?.environment, 'development')
  t.ok(reads[0]?.signInId)
  t.notOk(
    b.logs.some((l) => l.includes(CANARY)),
    'no value in the server log',
  )
})

t.test('an environment with no variables reads as an empty object', async (t) => {
  const b = await build(t)
  const v = await b.createVault('alice')
  const res = await b.get(`/api/env/${v}/preview`, await b.signIn('alice'))
  t.equal(res.statusCode, 200)
  t.same(res.json(), { vault: v, environment: 'preview', variables: {} })
})

t.test('403 forbidden for a role that cannot read, logged as refused, no value delivered', async (t) => {
  const b = await build(t)
  const v = await b.createVault('alice', { members: { bob: 'editor', carol: 'viewer' } })
  await b.setValues(v, 'production', { SECRET: CANARY })
  await b.setValues(v, 'development', { DEV: CANARY })
  const cases: Array<[string, string, RegExp]> = [
    ['bob', 'production', /^reading production of vault [0-9a-f]{8}: your role \(editor\) cannot read owners-only environments$/],
    ['carol', 'production', /^reading production of vault [0-9a-f]{8}: your role \(viewer\) cannot read any environment$/],
    ['carol', 'development', /^reading development of vault [0-9a-f]{8}: your role \(viewer\) cannot read any environment$/],
  ]
  for (const [person, env, message] of cases) {
    const res = await b.get(`/api/env/${v}/${env}`, await b.signIn(person))
    expectError(t, res, 403, 'forbidden', 'database (your role)', { vault: v, message, secrets: [CANARY] })
  }
  const refused = (await b.storage.listAccessLog(v, { action: 'refused', limit: 10 })).reverse()
  t.same(
    refused.map((r) => [r.personId, r.environment]),
    [
      ['bob', 'production'],
      ['carol', 'production'],
      ['carol', 'development'],
    ],
  )
  t.same(await b.storage.listAccessLog(v, { action: 'read', limit: 10 }), [], 'no read logged')
})

t.test('404 not_found, the same for every unreachable case', async (t) => {
  const b = await build(t)
  const v = await b.createVault('alice')
  const theirs = await b.createVault('dave')
  await b.setValues(theirs, 'development', { X: CANARY })
  const token = await b.signIn('alice')
  const bodies = new Set<string>()
  for (const url of [
    `/api/env/${theirs}/development`, // exists, not shared
    `/api/env/3f2a9c1e-0000-4000-8000-00000000dead/development`, // no such vault
    `/api/env/${v}/staging`, // no such environment
    `/api/env/${v}/Development`, // names are exact
    `/api/env/not-a-uuid/development`,
    `/api/env/${v.toUpperCase()}/nope`,
  ]) {
    const res = await b.get(url, token)
    expectError(t, res, 404, ...NOT_FOUND, { secrets: [CANARY, 'staging', 'not-a-uuid', 'Development'] })
    const { error, where, message } = res.json()
    bodies.add(JSON.stringify({ error, where, reason: message.replace(/^[^:]*: /, '') }))
  }
  t.equal(bodies.size, 1, 'the answer never says which')
  t.same(await b.storage.listAccessLog(theirs, { limit: 10 }).then((r) => r.filter((e) => e.action !== 'variable_set' && e.action !== 'vault_created')), [])
})

t.test('503 not_configured when the server has no key', async (t) => {
  const b = await build(t, { keyring: null })
  const v = await b.createVault('alice')
  const res = await b.get(`/api/env/${v}/development`, await b.signIn('alice'))
  expectError(t, res, 503, 'not_configured', 'encryption', { vault: v })
  t.same(await b.storage.listAccessLog(v, { action: 'read', limit: 10 }), [], 'nothing read, nothing logged')
  const list = await b.get('/api/env/vaults', await b.signIn('alice'))
  t.equal(list.statusCode, 200, 'the vault list needs no key')
})

t.test('500 decrypt_failed delivers nothing', async (t) => {
  const tamperings: Array<[string, (storage: Storage, v: string) => Promise<void>]> = [
    ['a flipped byte of a sealed value', (s, v) => tamper.flipByte(s, v, 'B_TWO')],
    ['a ciphertext copied to another row', (s, v) => tamper.copySealed(s, v, 'A_ONE', 'C_THREE')],
    ['a ciphertext copied to another environment', (s, v) => tamper.copyToEnvironment(s, v, 'A_ONE', 'preview')],
    ['a truncated value', (s, v) => tamper.setSealed(s, v, 'A_ONE', new Uint8Array([1, 2]))],
    ['a tampered wrapped data key', (s, v) => tamper.flipWrappedKey(s, v)],
  ]
  for (const [name, tamper] of tamperings) {
    t.test(name, async (t) => {
      const b = await build(t)
      const v = await b.createVault('alice')
      await b.setValues(v, 'development', { A_ONE: `${CANARY}-1`, B_TWO: `${CANARY}-2`, C_THREE: `${CANARY}-3` })
      await b.setValues(v, 'preview', { P: `${CANARY}-p` })
      await tamper(b.storage, v)
      const env = name.includes('environment') ? 'preview' : 'development'
      const res = await b.get(`/api/env/${v}/${env}`, await b.signIn('alice'))
      expectError(t, res, 500, 'decrypt_failed', 'encryption', { vault: v, secrets: [CANARY] })
      const ref = res.json().ref as string
      t.ok(
        b.logs.some((l) => l.includes(ref)),
        'the ref finds the record in the log',
      )
      t.notOk(
        b.logs.some((l) => l.includes(CANARY)),
        'no value in the log',
      )
    })
  }
})

t.test('a read whose access-log entry cannot be written fails and delivers nothing', async (t) => {
  const b = await build(t)
  const v = await b.createVault('alice')
  await b.setValues(v, 'development', { A: CANARY })
  await breakLogWrites(b.storage)
  const res = await b.get(`/api/env/${v}/development`, await b.signIn('alice'))
  t.ok(res.statusCode >= 500, 'a server error')
  expectError(t, res, res.statusCode, 'server_error', 'env API: database', { vault: v, secrets: [CANARY, 'writes broken'] })
})

t.test('database failures: 500, 503 unreachable, 504 timed out; the reason is the SQLSTATE code and name', async (t) => {
  const cases: Array<[string, number, string]> = [
    ['XX000', 500, 'internal error'],
    ['23503', 500, 'foreign key violation'],
    ['08006', 503, 'connection failure'],
    ['53300', 503, 'too many connections'],
    ['57014', 504, 'statement timeout'],
    ['55P03', 504, 'lock timeout'],
  ]
  for (const [code, status, name] of cases) {
    const b = await build(t, { wrapStorage: failing('readCurrent', () => new StorageError(code, 'variables')) })
    const v = await b.createVault('alice')
    const res = await b.get(`/api/env/${v}/development`, await b.signIn('alice'))
    expectError(t, res, status, 'server_error', 'env API: database', {
      vault: v,
      message: new RegExp(`^reading development of vault [0-9a-f]{8}: ${code} ${name} \\(variables\\)$`),
    })
    const ref = res.json().ref as string
    const line = b.logs.find((l) => l.includes(ref))
    t.ok(line, 'the full record is logged under the ref')
    t.match(JSON.parse(line as string), { ref, status, error: 'server_error', where: 'env API: database' })
  }
})

t.test('an unknown failure is a generic 500 server_error; the stack is in the log under the ref', async (t) => {
  const secret = 'internal detail with a value sk_live_abcdef'
  const b = await build(t, { wrapStorage: failing('listVaults', () => new TypeError(secret)) })
  const token = await b.signIn('alice')
  const v = await b.createVault('alice')
  const res = await b.get(`/api/env/${v}/development`, token)
  expectError(t, res, 500, 'server_error', 'env API', { vault: v, secrets: [secret, 'TypeError'] })
  const ref = res.json().ref as string
  const line = b.logs.find((l) => l.includes(ref))
  t.ok(line)
  t.match(JSON.parse(line as string), { ref, kind: 'TypeError', stack: /TypeError/ })
  t.notOk(
    b.logs.some((l) => l.includes(token)),
    'no token in any log line',
  )
})

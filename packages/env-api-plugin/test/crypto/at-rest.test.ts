import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { createTestKeyring } from '../../src/testing/keyring.js'
import { build, expectError } from '../api/helpers.js'

const CANARY = 'CANARY-plaintext-9e4b2a71c3'

function tempDir(t: { teardown(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'envkeep-at-rest-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

/** Every byte of the database files (main, WAL, shared memory), in plain and UTF-16 forms. */
function fileBytesContain(dir: string, needle: string): string[] {
  const forms = [Buffer.from(needle, 'utf8'), Buffer.from(needle, 'utf16le'), Buffer.from(needle.slice(0, 12), 'utf8')]
  return readdirSync(dir).filter((f) => {
    const bytes = readFileSync(join(dir, f))
    return forms.some((form) => bytes.includes(form))
  })
}

t.test('the SQLite file (WAL included) never holds a plaintext value', async (t) => {
  const dir = tempDir(t)
  const filename = join(dir, 'envkeep.db')
  const b = await build(t, { filename })
  const v = await b.createVault('alice')
  const token = await b.signIn('alice')
  await b.setValues(v, 'development', { DIRECT: `${CANARY}-direct` })
  const push = await b.push(v, 'development', token, { variables: { PUSHED: `${CANARY}-pushed`, UNICODE: `${CANARY}-ünï` } })
  t.equal(push.statusCode, 201)
  const pending = await b.push(v, 'preview', token, { variables: { STAGED: `${CANARY}-staged` } })
  t.equal(pending.statusCode, 201)
  const { decideImport } = await import('../../src/index.js')
  t.equal((await decideImport(b.storage, { importId: push.json().import, decision: 'applied', personId: 'alice', now: b.clock.now })).outcome, 'decided')
  const read = await b.get(`/api/env/${v}/development`, token)
  t.same(Object.keys(read.json().variables), ['DIRECT', 'PUSHED', 'UNICODE'], 'the values are there and readable')

  const files = readdirSync(dir)
  t.ok(files.some((f) => f.endsWith('-wal')), 'the WAL file exists and is searched too')
  t.same(fileBytesContain(dir, CANARY), [], 'no file holds the canary')
  t.ok(fileBytesContain(dir, 'PUSHED').length > 0, 'the search finds what is stored in plain (names), so it can fail')
  b.storage.database.sqlite.pragma('wal_checkpoint(TRUNCATE)')
  t.same(fileBytesContain(dir, CANARY), [], 'nor after a checkpoint')
  t.notOk(b.logs.some((l) => l.includes(CANARY)), 'nor the server log')
})

t.test('a wrong master key fails with decrypt_failed, not a crash; the right one still opens', async (t) => {
  const dir = tempDir(t)
  const filename = join(dir, 'envkeep.db')
  const first = await build(t, { filename, keyring: createTestKeyring('the right key') })
  const v = await first.createVault('alice')
  await first.setValues(v, 'development', { A: CANARY })
  await first.app.close()
  await first.storage.close()

  const wrong = await build(t, { filename, keyring: createTestKeyring('a wrong key') })
  const res = await wrong.get(`/api/env/${v}/development`, await wrong.signIn('alice'))
  expectError(t, res, 500, 'decrypt_failed', 'encryption', { vault: v, secrets: [CANARY] })
  const push = await wrong.push(v, 'development', await wrong.signIn('alice'), { variables: { B: CANARY } })
  expectError(t, push, 500, 'decrypt_failed', 'encryption', { vault: v, secrets: [CANARY] })
  t.equal((await wrong.get('/api/env/vaults', await wrong.signIn('alice'))).statusCode, 200, 'the server keeps working')
  await wrong.app.close()
  await wrong.storage.close()

  const right = await build(t, { filename, keyring: createTestKeyring('the right key') })
  const ok = await right.get(`/api/env/${v}/development`, await right.signIn('alice'))
  t.same(ok.json().variables, { A: CANARY })
})

t.test('each vault has its own data key; values do not open under another vault', async (t) => {
  const b = await build(t)
  const v1 = await b.createVault('alice')
  const v2 = await b.createVault('alice')
  await b.setValues(v1, 'development', { A: CANARY })
  await b.setValues(v2, 'development', { B: 'other' })
  const db = b.storage.database.sqlite
  const k1 = db.prepare('select wrapped_key from vaults where id = ?').get(v1) as { wrapped_key: Buffer }
  const k2 = db.prepare('select wrapped_key from vaults where id = ?').get(v2) as { wrapped_key: Buffer }
  t.notSame(k1.wrapped_key, k2.wrapped_key)
  const sealed = db.prepare("select sealed from variables where vault_id = ? and name = 'A'").get(v1) as { sealed: Buffer }
  db.prepare("update variables set sealed = ? where vault_id = ? and name = 'B'").run(sealed.sealed, v2)
  const res = await b.get(`/api/env/${v2}/development`, await b.signIn('alice'))
  expectError(t, res, 500, 'decrypt_failed', 'encryption', { secrets: [CANARY] })
})

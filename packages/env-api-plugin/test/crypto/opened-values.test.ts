import t, { type Test } from 'tap'
import type { SealedVariable, Storage } from '../../src/index.js'
import { createTestKeyring } from '../../src/testing/keyring.js'

// createVaultCrypto keeps no opened value (issue 20: no value in plaintext
// between requests; the core caches sealed rows instead, and the crypto an
// environment's values sealed together). `open` and `openText` are counted through a mocked
// seal module.

const VAULT = '3f2a9c1e-0000-4000-8000-000000000001'

async function load(t: Test) {
  const seal = await import('../../src/crypto/seal.js')
  const calls = { open: 0 }
  const mod = await t.mockImport<typeof import('../../src/vault-service.js')>('../../src/vault-service.js', {
    '../../src/crypto/seal.ts': {
      ...seal,
      open: (...args: Parameters<typeof seal.open>) => {
        calls.open++
        return seal.open(...args)
      },
      openText: (...args: Parameters<typeof seal.openText>) => {
        calls.open++
        return seal.openText(...args)
      },
    },
  })
  let wrapped: Uint8Array | null = null
  const storage = {
    getWrappedKey: async () => wrapped,
    swapWrappedKey: async (swap: { expect: Uint8Array | null; next: Uint8Array }) => {
      if (wrapped !== swap.expect) return { ok: false, reason: 'changed' }
      wrapped = swap.next
      return { ok: true, value: undefined }
    },
  } as unknown as Storage
  return { mod, storage, calls }
}

function flip(v: SealedVariable): SealedVariable {
  const b = Buffer.from(v.sealed)
  b[14] = (b[14] as number) ^ 1
  return { name: v.name, sealed: b }
}

t.test('no opened value is kept between reads (issue 20): a repeated read opens one sealed snapshot', async (t) => {
  const { mod, storage, calls } = await load(t)
  const crypto = mod.createVaultCrypto(storage, createTestKeyring())
  const sealed = await crypto.sealValues(VAULT, 'development', { A: 'canary-a', B: 'canary-b', C: 'canary-c' })
  t.same(await crypto.openValues(VAULT, 'development', sealed), { A: 'canary-a', B: 'canary-b', C: 'canary-c' })
  t.equal(calls.open, 3, 'first read opens each value')
  t.same(await crypto.openValues(VAULT, 'development', sealed), { A: 'canary-a', B: 'canary-b', C: 'canary-c' })
  t.equal(calls.open, 4, 'the same rows again: one cipher opens them all (the snapshot)')
  t.same(Object.keys(await crypto.openValues(VAULT, 'development', sealed)), ['A', 'B', 'C'], 'in the order given')
  calls.open = 0
  const copies = sealed.map((v) => ({ name: v.name, sealed: Buffer.from(v.sealed) }))
  t.same(await crypto.openValues(VAULT, 'development', copies), { A: 'canary-a', B: 'canary-b', C: 'canary-c' })
  t.equal(calls.open, 3, 'rows read again from storage (other objects) are each opened again')
  calls.open = 0
  crypto.forget()
  await crypto.openValues(VAULT, 'development', copies)
  t.equal(calls.open, 3, 'forget() drops the snapshots: each value is opened again')
  calls.open = 0
  await crypto.openValues(VAULT, 'development', copies.slice(0, 2))
  t.equal(calls.open, 2, 'fewer rows: no snapshot of all of them answers')
  await t.rejects(crypto.openValues(VAULT, 'development', [sealed[0] as SealedVariable, flip(sealed[1] as SealedVariable)]), { code: 'decrypt_failed' })
  await t.rejects(crypto.openValues(VAULT, 'preview', sealed), { code: 'decrypt_failed' }, 'bytes of another environment do not open')
})

t.test('the snapshot is sealed, not plaintext, and answers no other environment', async (t) => {
  const { mod, storage } = await load(t)
  const crypto = mod.createVaultCrypto(storage, createTestKeyring(), { maxSnapshotBytes: 1024 * 1024 })
  const sealed = await crypto.sealValues(VAULT, 'development', { A: 'canary-snapshot-a', B: 'canary-snapshot-b' })
  await crypto.openValues(VAULT, 'development', sealed)
  // the rows of development, handed in for preview: the per-value places refuse them, snapshot or not
  await t.rejects(crypto.openValues(VAULT, 'preview', sealed), { code: 'decrypt_failed' })
  const none = mod.createVaultCrypto(storage, createTestKeyring(), { maxSnapshotBytes: 0 })
  const again = await none.sealValues(VAULT, 'development', { A: 'x', B: 'y' })
  t.same(await none.openValues(VAULT, 'development', again), { A: 'x', B: 'y' }, 'maxSnapshotBytes 0: no snapshots, reads still answer')
})

t.test('without a keyring it answers 503', async (t) => {
  const { mod, storage } = await load(t)
  const withKey = mod.createVaultCrypto(storage, createTestKeyring())
  const sealed = await withKey.sealValues(VAULT, 'development', { A: 'canary-a' })
  await withKey.openValues(VAULT, 'development', sealed)
  const none = mod.createVaultCrypto(storage, null)
  await t.rejects(none.openValues(VAULT, 'development', sealed), { code: 'not_configured' })
})

t.test('through the read route: a value tampered with after it was read still fails the whole read', async (t) => {
  const { build, expectError, tamper } = await import('../api/helpers.js')
  const CANARY = 'canary-opened-values-7f3a'
  const tamperings: Array<[string, (storage: Storage, v: string) => Promise<void>]> = [
    ['a flipped byte', (s, v) => tamper.flipByte(s, v, 'B_TWO')],
    ['a ciphertext copied to another row', (s, v) => tamper.copySealed(s, v, 'A_ONE', 'B_TWO')],
  ]
  for (const [name, tamper] of tamperings) {
    t.test(name, async (t) => {
      const b = await build(t)
      const v = await b.createVault('alice')
      await b.setValues(v, 'development', { A_ONE: `${CANARY}-1`, B_TWO: `${CANARY}-2` })
      const token = await b.signIn('alice')
      for (let i = 0; i < 2; i++) {
        const ok = await b.get(`/api/env/${v}/development`, token)
        t.equal(ok.statusCode, 200)
        t.same(ok.json().variables, { A_ONE: `${CANARY}-1`, B_TWO: `${CANARY}-2` })
      }
      await tamper(b.storage, v)
      const res = await b.get(`/api/env/${v}/development`, token)
      expectError(t, res, 500, 'decrypt_failed', 'encryption', { vault: v, secrets: [CANARY] })
    })
  }
})

t.test('openValuesJson: the values as JSON text, from the snapshot once it holds; a value in reference form is said', async (t) => {
  const { mod, storage, calls } = await load(t)
  const crypto = mod.createVaultCrypto(storage, createTestKeyring())
  const sealed = await crypto.sealValues(VAULT, 'development', { A: 'canary-json-a', B: 'say "hi"\n', C: 'ü' })
  const first = await crypto.openValuesJson(VAULT, 'development', sealed)
  t.same(JSON.parse(first.json.toString('utf8')), { A: 'canary-json-a', B: 'say "hi"\n', C: 'ü' })
  t.same(Object.keys(JSON.parse(first.json.toString('utf8'))), ['A', 'B', 'C'], 'in the order given')
  t.equal(first.mayRefer, false)
  t.equal(calls.open, 3, 'first: each value opened')
  calls.open = 0
  const again = await crypto.openValuesJson(VAULT, 'development', sealed)
  t.equal(again.json.toString('utf8'), first.json.toString('utf8'))
  t.equal(calls.open, 1, 'again: the snapshot alone')
  t.same(await crypto.openValues(VAULT, 'development', sealed), { A: 'canary-json-a', B: 'say "hi"\n', C: 'ü' }, 'openValues answers from the same snapshot')
  const withRef = await crypto.sealValues(VAULT, 'development', { A: '\u0000ref:production.A', B: 'plain' })
  t.equal((await crypto.openValuesJson(VAULT, 'development', withRef)).mayRefer, true, 'a value in reference form is said')
  t.equal((await crypto.openValuesJson(VAULT, 'development', withRef)).mayRefer, true, 'also from the snapshot')
  t.same(JSON.parse((await crypto.openValuesJson(VAULT, 'development', [])).json.toString('utf8')), {})
  await t.rejects(crypto.openValuesJson(VAULT, 'development', [sealed[0] as SealedVariable, flip(sealed[1] as SealedVariable)]), { code: 'decrypt_failed' })
})

t.test('through the read route: the spliced answer is the schema answer (headers, fields, values), before and after a change', async (t) => {
  const { build } = await import('../api/helpers.js')
  const b = await build(t)
  const v = await b.createVault('alice')
  const values = { A_ONE: 'canary-route-1', B_TWO: 'with "quotes" and \\ and ü', C_THREE: '' }
  await b.setValues(v, 'development', values)
  const token = await b.signIn('alice')
  for (let i = 0; i < 2; i++) {
    const res = await b.get(`/api/env/${v}/development`, token)
    t.equal(res.statusCode, 200)
    t.equal(res.headers['content-type'], 'application/json; charset=utf-8')
    t.equal(res.headers['cache-control'], 'no-store, private')
    t.same(Object.keys(res.json()), ['vault', 'environment', 'variables'])
    t.same(res.json(), { vault: v, environment: 'development', variables: values })
  }
  await b.setValues(v, 'development', { ...values, A_ONE: 'canary-route-changed' })
  const after = await b.get(`/api/env/${v}/development`, token)
  t.same(after.json().variables, { ...values, A_ONE: 'canary-route-changed' }, 'a change is read at once')
})

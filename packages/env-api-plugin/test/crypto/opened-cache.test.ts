import { randomBytes } from 'node:crypto'
import t, { type Test } from 'tap'
import type { SealedVariable, Storage } from '../../src/index.js'
import { createTestKeyring } from '../../src/testing/keyring.js'

// createVaultCrypto's openedCacheBytes: a value is reused only when the
// sealed bytes are exactly the ones that opened before in the same place.
// `open` is counted through a mocked seal module.

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

t.test('a repeated read opens nothing again; changed or tampered bytes are opened (and fail) as without the cache', async (t) => {
  const { mod, storage, calls } = await load(t)
  const crypto = mod.createVaultCrypto(storage, createTestKeyring(), { openedCacheBytes: 1024 * 1024 })
  const sealed = await crypto.sealValues(VAULT, 'development', { A: 'canary-a', B: 'canary-b' })

  t.same(await crypto.openValues(VAULT, 'development', sealed), { A: 'canary-a', B: 'canary-b' })
  t.equal(calls.open, 2, 'first read opens each value')
  t.same(
    await crypto.openValues(
      VAULT,
      'development',
      sealed.map((v) => ({ name: v.name, sealed: Buffer.from(v.sealed) })),
    ),
    {
      A: 'canary-a',
      B: 'canary-b',
    },
  )
  t.equal(calls.open, 2, 'same bytes again (a fresh copy, as read from the database): nothing opened')

  const [a2] = await crypto.sealValues(VAULT, 'development', { A: 'canary-a2' })
  t.same(await crypto.openValues(VAULT, 'development', [a2 as SealedVariable, sealed[1] as SealedVariable]), { A: 'canary-a2', B: 'canary-b' })
  t.equal(calls.open, 3, 'a changed value is opened')

  await t.rejects(
    crypto.openValues(VAULT, 'development', [a2 as SealedVariable, flip(sealed[1] as SealedVariable)]),
    { code: 'decrypt_failed' },
    'a tampered row fails the whole read even though its name was read before',
  )
  await t.rejects(
    crypto.openValues(VAULT, 'preview', sealed),
    { code: 'decrypt_failed' },
    'the same bytes in another environment are not reused (they do not open there)',
  )
})

t.test('without a keyring it still answers 503, cache or not', async (t) => {
  const { mod, storage } = await load(t)
  const withKey = mod.createVaultCrypto(storage, createTestKeyring(), { openedCacheBytes: 1024 * 1024 })
  const sealed = await withKey.sealValues(VAULT, 'development', { A: 'canary-a' })
  await withKey.openValues(VAULT, 'development', sealed)
  const none = mod.createVaultCrypto(storage, null, { openedCacheBytes: 1024 * 1024 })
  await t.rejects(none.openValues(VAULT, 'development', sealed), { code: 'not_configured' })
})

t.test('the cache stays within its bytes: least recently read environments go first', async (t) => {
  const { mod, storage, calls } = await load(t)
  // room for one environment of 20 values of ~100 characters (~6.5 kB counted), not two
  const crypto = mod.createVaultCrypto(storage, createTestKeyring(), { openedCacheBytes: 8000 })
  const values = (tag: string) => Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`V${i}`, tag + randomBytes(48).toString('hex')]))
  const dev = await crypto.sealValues(VAULT, 'development', values('d'))
  const pre = await crypto.sealValues(VAULT, 'preview', values('p'))
  await crypto.openValues(VAULT, 'development', dev)
  t.equal(calls.open, 20)
  await crypto.openValues(VAULT, 'development', dev)
  t.equal(calls.open, 20, 'kept')
  await crypto.openValues(VAULT, 'preview', pre)
  t.equal(calls.open, 40)
  const again = await crypto.openValues(VAULT, 'development', dev)
  t.equal(calls.open, 60, 'development was evicted to make room for preview')
  t.equal(Object.keys(again).length, 20, 'and still answered in full')
})

t.test('off by default', async (t) => {
  const { mod, storage, calls } = await load(t)
  const crypto = mod.createVaultCrypto(storage, createTestKeyring())
  const sealed = await crypto.sealValues(VAULT, 'development', { A: 'canary-a' })
  await crypto.openValues(VAULT, 'development', sealed)
  await crypto.openValues(VAULT, 'development', sealed)
  t.equal(calls.open, 2)
})

t.test('through the read route: a value tampered with after it was read still fails the whole read', async (t) => {
  const { build, expectError, tamper } = await import('../api/helpers.js')
  const CANARY = 'canary-opened-cache-7f3a'
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

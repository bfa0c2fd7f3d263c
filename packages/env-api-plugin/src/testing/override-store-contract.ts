import assert from 'node:assert/strict'
import { resealForTest, storeFirstKey } from './keys.js'
import { randomBytes, randomUUID } from 'node:crypto'
import type { OverrideStore } from '../adapters/override-store.js'
import type { VaultStore } from '../adapters/vault-store.js'
import { testLogEntry } from './log-entry.js'
import type { ContractRunner } from './vault-store-contract.js'

/**
 * The contract every override store must meet (adapters/override-store.ts),
 * as plain async cases that throw, on the backend's whole storage. The
 * cases check the rows through the store's own reads and the access log.
 */
export interface OverrideStoreFixture {
  readonly store: VaultStore & OverrideStore
  close(): Promise<void>
}

export type MakeOverrideStore = () => Promise<OverrideStoreFixture>

export function runOverrideStoreContract(t: ContractRunner, make: MakeOverrideStore): void {
  for (const c of overrideStoreContract) {
    t.test(c.name, async (t) => {
      await c.run(make)
      t.pass('the case holds')
    })
  }
}

const T0 = new Date('2026-11-21T10:00:00.000Z')

async function withVault(make: MakeOverrideStore, fn: (store: VaultStore & OverrideStore, vaultId: string) => Promise<void>): Promise<void> {
  const f = await make()
  try {
    const vaultId = randomUUID()
    await f.store.createVault(
      {
        id: vaultId,
        name: `v-${vaultId.slice(0, 8)}`,
        ownerId: 'owner',
        plan: 'self-hosted',
        environments: [
          { name: 'development', ownersOnly: false },
          { name: 'production', ownersOnly: true },
        ],
        now: T0,
      },
      testLogEntry({ vaultId, action: 'vault_created' }),
    )
    await fn(f.store, vaultId)
  } finally {
    await f.close()
  }
}

const set = (vaultId: string, personId: string, name: string, sealed: Uint8Array | null, environment = 'development') =>
  ({ kind: 'set', vaultId, environment, personId, name, sealed, now: T0 }) as const

const DONE = { ok: true, value: undefined }
const refused = (reason: 'not_found' | 'not_allowed' | 'unchanged') => ({ ok: false, reason })

export const overrideStoreContract: readonly { readonly name: string; run(make: MakeOverrideStore): Promise<void> }[] = [
  {
    name: 'overrides exist only where allowed; each person reads their own, in name order; off deletes them all',
    run: (make) =>
      withVault(make, async (store, vaultId) => {
        const log = (action: 'override_set' | 'override_deleted' | 'environment_changed') => testLogEntry({ vaultId, action, environment: 'development' })
        const a = randomBytes(40)
        const b = randomBytes(41)
        assert.deepEqual(await store.readOverrides(vaultId, 'development'), { allowed: false, overrides: [] })
        assert.deepEqual(
          await store.changeOverride(set(vaultId, 'ana', 'TOKEN', a), log('override_set')),
          refused('not_allowed'),
          'not allowed: nothing written',
        )
        assert.deepEqual(await store.changeOverride({ kind: 'allow', vaultId, environment: 'development', allow: true }, log('environment_changed')), DONE)
        assert.deepEqual(
          await store.changeOverride({ kind: 'allow', vaultId, environment: 'development', allow: true }, log('environment_changed')),
          refused('unchanged'),
          'already on',
        )
        assert.deepEqual(
          await store.changeOverride({ kind: 'allow', vaultId, environment: 'nope', allow: true }, log('environment_changed')),
          refused('not_found'),
        )
        assert.deepEqual(await store.changeOverride(set(vaultId, 'ana', 'TOKEN', a), log('override_set')), DONE)
        assert.deepEqual(await store.changeOverride(set(vaultId, 'bo', 'TOKEN', b), log('override_set')), DONE)
        assert.deepEqual(await store.changeOverride(set(vaultId, 'ana', 'A_FIRST', b), log('override_set')), DONE)
        const ana = await store.readOverrides(vaultId, 'development', 'ana')
        assert.equal(ana.allowed, true)
        assert.deepEqual(
          ana.overrides.map((o) => [o.name, o.personId, Buffer.from(o.sealed).toString('hex')]),
          [
            ['A_FIRST', 'ana', b.toString('hex')],
            ['TOKEN', 'ana', a.toString('hex')],
          ],
        )
        const all = await store.readOverrides(vaultId, 'development')
        assert.deepEqual(
          all.overrides.map((o) => [o.name, o.personId]),
          [
            ['A_FIRST', 'ana'],
            ['TOKEN', 'ana'],
            ['TOKEN', 'bo'],
          ],
        )
        assert.deepEqual((await store.readOverrides(vaultId, 'production')).overrides, [], 'per environment')
        // replacing keeps one row; removing twice removes once
        assert.deepEqual(await store.changeOverride(set(vaultId, 'ana', 'TOKEN', b), log('override_set')), DONE)
        assert.equal(Buffer.from((await store.readOverrides(vaultId, 'development', 'ana')).overrides[1]!.sealed).toString('hex'), b.toString('hex'))
        assert.deepEqual(await store.changeOverride(set(vaultId, 'ana', 'A_FIRST', null), log('override_deleted')), DONE)
        assert.deepEqual(await store.changeOverride(set(vaultId, 'ana', 'A_FIRST', null), log('override_deleted')), refused('unchanged'))
        const logged = await store.listAccessLog(vaultId, { limit: 100 })
        assert.equal(logged.filter((l) => l.action === 'override_set').length, 4, 'one entry per change made, none for a refusal')
        assert.equal(logged.filter((l) => l.action === 'override_deleted').length, 1)
        assert.deepEqual(await store.changeOverride({ kind: 'allow', vaultId, environment: 'development', allow: false }, log('environment_changed')), DONE)
        assert.deepEqual(
          await store.changeOverride({ kind: 'allow', vaultId, environment: 'development', allow: false }, log('environment_changed')),
          refused('unchanged'),
          'already off',
        )
        assert.deepEqual(await store.readOverrides(vaultId, 'development'), { allowed: false, overrides: [] })
      }),
  },
  {
    name: 'a data-key rotation reseals overrides; deleting the vault deletes them',
    run: (make) =>
      withVault(make, async (store, vaultId) => {
        await storeFirstKey(store, vaultId, randomBytes(60))
        await store.changeOverride(
          { kind: 'allow', vaultId, environment: 'development', allow: true },
          testLogEntry({ vaultId, action: 'environment_changed' }),
        )
        await store.changeOverride(set(vaultId, 'ana', 'TOKEN', randomBytes(40)), testLogEntry({ vaultId, action: 'override_set' }))
        const resealed = randomBytes(44)
        let seen = 0
        const ok = await resealForTest(store, vaultId, async (current) => {
          seen = current.overrides?.length ?? -1
          return { ...current, wrappedKey: randomBytes(60), overrides: (current.overrides ?? []).map((o) => ({ ...o, sealed: resealed })) }
        })
        assert.equal(ok, true)
        assert.equal(seen, 1, 'the override is among the vault secrets')
        assert.equal(Buffer.from((await store.readOverrides(vaultId, 'development', 'ana')).overrides[0]!.sealed).toString('hex'), resealed.toString('hex'))
        assert.deepEqual(await store.deleteVault({ vaultId, by: null, at: T0 }), { ok: true, value: undefined })
        assert.deepEqual(await store.readOverrides(vaultId, 'development'), { allowed: false, overrides: [] })
      }),
  },
]

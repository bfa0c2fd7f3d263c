// The vault store contract, part: the storage limit's usage stays exact through every change of pushes.
import assert from 'node:assert/strict'
import type { HistoryStore } from '../../adapters/history-store.js'
import type { ImportStore } from '../../adapters/import-store.js'
import type { VaultStore } from '../../adapters/vault-store.js'
import type { VaultStoreContractCase } from './types.js'
import { storeFirstKey } from '../keys.js'
import { writeTestValue } from '../write-value.js'
import { DAY, MINUTE, OWNER, T0, at, entry, newImport, newVault, put, sealed, sv, withStore } from './fixtures.js'

/**
 * A vault's usage as the storage limit sees it, asked without writing anything: a one-value
 * push under a limit of nothing is refused with the usage it would make (one value, one byte
 * more than the vault holds).
 */
async function usageSeen(store: ImportStore, vaultId: string): Promise<{ n: number; bytes: number }> {
  const byCount = await store.createImport(
    { ...newImport(vaultId, [sv('USAGE_PROBE', 1)]), limit: { maxVariables: 0, maxBytes: 1e15 } },
    entry(vaultId, 'push_created'),
  )
  const byBytes = await store.createImport(
    { ...newImport(vaultId, [sv('USAGE_PROBE', 1)]), limit: { maxVariables: 1e12, maxBytes: 0 } },
    entry(vaultId, 'push_created'),
  )
  assert.ok(!byCount.ok && byCount.reason === 'storage_limit' && byCount.limit === 'variables', 'the count probe is refused')
  assert.ok(!byBytes.ok && byBytes.reason === 'storage_limit' && byBytes.limit === 'bytes', 'the size probe is refused')
  return { n: byCount.usage - 1, bytes: byBytes.usage - 1 }
}

/** The same usage counted from what the vault holds now: its variables and the staged values of its pending pushes. */
async function usageCounted(store: VaultStore, vaultId: string): Promise<{ n: number; bytes: number }> {
  const s = await store.readVaultSecrets(vaultId)
  assert.ok(s, 'the vault has a key')
  const rows = [...s.variables, ...s.staged]
  return { n: rows.length, bytes: rows.reduce((n, r) => n + r.sealed.byteLength, 0) }
}

async function sameUsage(store: VaultStore & ImportStore, vaultId: string, after: string): Promise<void> {
  assert.deepEqual(await usageSeen(store, vaultId), await usageCounted(store, vaultId), `usage after ${after} is a recount`)
}

export const usageCases: readonly VaultStoreContractCase[] = [
  {
    name: 'storage limit: the usage stays a recount of variables and staged values through staging, applying, rejecting, expiring (three ways), a failed push and a reseal',
    run: (make) =>
      withStore(make, async ({ store, probe }) => {
        const id = await newVault(store)
        await storeFirstKey(store, id, sealed(60))
        await writeTestValue(store, put(id, 'development', sv('A', 100), OWNER, T0), entry(id, 'variable_set'))
        await writeTestValue(store, put(id, 'preview', sv('B', 50), OWNER, T0), entry(id, 'variable_set'))
        await sameUsage(store, id, 'variables only')

        const stage = async (values: Parameters<typeof newImport>[1], expiresAt = at(7 * DAY), deletes: string[] = []) => {
          const input = newImport(id, values, { expiresAt, deletes })
          const r = await store.createImport(input, entry(id, 'push_created'))
          assert.ok(r.ok, 'staged')
          return input.id
        }
        const applied = await stage([sv('A', 30), sv('C', 70), sv('D', 11)]) // A replaces a stored value
        const rejected = await stage([sv('E', 200), sv('F', 3)])
        const lazily = await stage([sv('G', 17)], at(MINUTE))
        const swept = await stage([sv('H', 19), sv('I', 23)], at(2 * MINUTE))
        const tooLate = await stage([sv('J', 29)], at(MINUTE))
        await stage([], at(7 * DAY), ['B']) // a deletion stages nothing
        const kept = await stage([sv('K', 41)])
        await sameUsage(store, id, 'staging')

        const undo = await probe.breakWrites('import_values')
        try {
          await assert.rejects(store.createImport(newImport(id, [sv('L', 500)]), entry(id, 'push_created')))
        } finally {
          await undo()
        }
        await sameUsage(store, id, 'a push that failed')

        assert.ok((await store.decideImport({ importId: applied, decision: 'applied', by: OWNER, now: T0 }, entry(id, 'push_applied'))).ok)
        await sameUsage(store, id, 'applying')
        assert.ok((await store.decideImport({ importId: rejected, decision: 'rejected', by: OWNER, now: T0 }, entry(id, 'push_rejected'))).ok)
        await sameUsage(store, id, 'rejecting')
        assert.equal((await store.getImport(lazily, at(MINUTE)))?.status, 'expired')
        await sameUsage(store, id, 'expiring on read')
        const late = await store.decideImport({ importId: tooLate, decision: 'applied', by: OWNER, now: at(MINUTE) }, entry(id, 'push_applied'))
        assert.deepEqual(late, { ok: false, reason: 'not_pending' })
        await sameUsage(store, id, 'a decision past the expiry')
        assert.deepEqual(await store.expireImports(at(2 * MINUTE)), { ok: true, value: 1 })
        assert.equal((await store.getImport(swept, at(2 * MINUTE)))?.status, 'expired')
        await sameUsage(store, id, 'the sweep')

        // a reseal may change the size of every sealed value, the staged ones too
        const got = await store.readVaultSecrets(id)
        assert.ok(got)
        assert.deepEqual(
          got.staged.map((s) => s.importId),
          [kept],
        )
        const grow = (u: Uint8Array) => new Uint8Array([...u, ...sealed(16)])
        const resealed = await store.swapWrappedKey({
          kind: 'reseal',
          vaultId: id,
          expect: got,
          next: {
            wrappedKey: grow(got.wrappedKey),
            variables: got.variables.map((v) => ({ ...v, sealed: grow(v.sealed) })),
            staged: got.staged.map((v) => ({ ...v, sealed: grow(v.sealed) })),
            history: got.history.map((v) => ({ ...v, sealed: grow(v.sealed) })),
          },
        })
        assert.ok(resealed.ok)
        await sameUsage(store, id, 'a reseal')

        // each vault's figures are its own
        const other = await newVault(store)
        await storeFirstKey(store, other, sealed(60))
        await sameUsage(store, other, 'nothing')
      }),
  },
]

type UsageStore = VaultStore & ImportStore & HistoryStore & { close(): Promise<void> }

/**
 * A backend's migration test of the staged usage (issue 20): pushes staged and decided on a
 * database that `rewind` takes back to before the migration that counts them (its table and
 * its record gone); opened again, the usage is the recount, and deciding a push still works.
 * Throws on a failure.
 */
export async function checkStagedUsageBackfill(open: () => Promise<UsageStore>, rewind: (store: UsageStore) => Promise<void>): Promise<void> {
  let store = await open()
  const id = await newVault(store)
  await storeFirstKey(store, id, sealed(60))
  await writeTestValue(store, put(id, 'development', sv('V', 7), OWNER, T0), entry(id, 'variable_set'))
  const stage = async (values: Parameters<typeof newImport>[1]) => {
    const input = newImport(id, values)
    assert.ok((await store.createImport(input, entry(id, 'push_created'))).ok)
    return input.id
  }
  const first = await stage([sv('A', 10), sv('B', 20)])
  await stage([sv('C', 30)])
  const decided = await stage([sv('D', 5)])
  assert.ok((await store.decideImport({ importId: decided, decision: 'rejected', by: OWNER, now: T0 }, entry(id, 'push_rejected'))).ok)
  await rewind(store)
  await store.close()
  store = await open()
  try {
    assert.deepEqual(await usageSeen(store, id), { n: 4, bytes: 67 }, 'the variable and the three values still pending, counted by the migration')
    await sameUsage(store, id, 'the migration')
    assert.ok((await store.decideImport({ importId: first, decision: 'rejected', by: OWNER, now: T0 }, entry(id, 'push_rejected'))).ok)
    assert.deepEqual(await usageSeen(store, id), { n: 2, bytes: 37 }, 'a decision after it counts down from there')
  } finally {
    await store.close()
  }
}

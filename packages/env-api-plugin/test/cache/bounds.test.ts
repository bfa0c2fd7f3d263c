import { randomUUID } from 'node:crypto'
import t from 'tap'
import { createCoreCache } from '../../src/cache/cached-storage.js'
import { createMemoryStorage, TEST_NO_LIMIT, testLogEntry, writeTestValue } from '../../src/testing/index.js'
import type { Storage } from '../../src/index.js'

const put = (storage: Storage, vaultId: string, name: string, sealed: Uint8Array) =>
  writeTestValue(
    storage,
    { vaultId, environment: 'development', value: { name, sealed }, by: null, now: new Date(), limit: TEST_NO_LIMIT },
    testLogEntry({ vaultId, action: 'variable_set' }),
  )

// The core's caches are bounded (issue 20): entries by count, sealed rows by bytes; what
// falls out is read again from storage, never answered wrong.

t.test('the caches never hold more than their bounds, and what was dropped is read again', async (t) => {
  const storage = createMemoryStorage()
  t.teardown(() => storage.close())
  const cache = createCoreCache(storage, { maxEntries: 5, maxSealedBytes: 4096 })
  t.teardown(() => cache.close())
  const vaults: string[] = []
  for (let i = 0; i < 12; i++) {
    const id = randomUUID()
    await storage.createVault(
      { id, name: `v${i}`, ownerId: 'p-ana', plan: 'self-hosted', environments: [{ name: 'development', ownersOnly: false }], now: new Date() },
      testLogEntry({ vaultId: id, action: 'vault_created' }),
    )
    await put(storage, id, 'BIG', new Uint8Array(1000).fill(i + 1))
    vaults.push(id)
  }
  for (const id of vaults) {
    t.equal((await cache.storage.listVaults('p-ana', { vaultId: id }))[0]?.id, id)
    const current = await cache.storage.readCurrent(id, 'development')
    t.equal(current.variables[0]?.sealed[0], vaults.indexOf(id) + 1, 'the rows of that vault')
  }
  const sizes = cache.sizes()
  t.ok(sizes.access <= 5, `vault access entries within the bound (${sizes.access})`)
  t.ok(sizes.sealedBytes <= 4096, `sealed bytes within the bound (${sizes.sealedBytes})`)
  t.ok(sizes.access > 0 && sizes.sealedBytes > 0, 'and something is kept')
  // the first vault fell out of both: read again, with the same answer
  t.equal((await cache.storage.readCurrent(vaults[0] as string, 'development')).variables[0]?.sealed[0], 1)
})

t.test('an environment too big for the byte bound is answered, not kept', async (t) => {
  const storage = createMemoryStorage()
  t.teardown(() => storage.close())
  const cache = createCoreCache(storage, { maxSealedBytes: 2048 })
  t.teardown(() => cache.close())
  const id = randomUUID()
  await storage.createVault(
    { id, name: 'big', ownerId: 'p-ana', plan: 'self-hosted', environments: [{ name: 'development', ownersOnly: false }], now: new Date() },
    testLogEntry({ vaultId: id, action: 'vault_created' }),
  )
  await put(storage, id, 'HUGE', new Uint8Array(10_000).fill(7))
  t.equal((await cache.storage.readCurrent(id, 'development')).variables.length, 1)
  t.equal(cache.sizes().sealedBytes, 0)
})

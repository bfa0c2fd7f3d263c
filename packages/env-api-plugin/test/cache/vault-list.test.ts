import { randomUUID } from 'node:crypto'
import t from 'tap'
import { createCoreCache } from '../../src/cache/cached-storage.js'
import { createMemoryStorage, testLogEntry } from '../../src/testing/index.js'
import type { Storage } from '../../src/index.js'

const newVault = (storage: Storage, name: string, ownerId = 'p-ana') => {
  const id = randomUUID()
  return storage
    .createVault(
      { id, name, ownerId, plan: 'self-hosted', environments: [{ name: 'development', ownersOnly: false }], now: new Date() },
      testLogEntry({ vaultId: id, action: 'vault_created' }),
    )
    .then(() => id)
}

// Issue 20: a person's whole vault list (GET /api/env/vaults, the vaults page) is held by the
// core like their access to one vault, and never outlives a change.
t.test("a person's vault list is read once, and again after any change, here or elsewhere", async (t) => {
  const storage = createMemoryStorage()
  t.teardown(() => storage.close())
  let reads = 0
  const counted: Storage = {
    ...storage,
    listVaults: (personId, filter) => {
      reads++
      return storage.listVaults(personId, filter)
    },
  }
  const cache = createCoreCache(counted)
  t.teardown(() => cache.close())
  await newVault(storage, 'alpha')
  const names = async () => (await cache.storage.listVaults('p-ana')).map((v) => v.name)

  t.same(await names(), ['alpha'])
  t.same(await names(), ['alpha'])
  t.equal(reads, 1, 'the second list came from the cache')
  t.same(await cache.storage.listVaults('p-bo'), [], 'another person has their own list')

  await newVault(cache.storage, 'beta')
  t.same(await names(), ['alpha', 'beta'], 'a vault made through this core is listed at once')

  await newVault(storage, 'gamma')
  t.same(await names(), ['alpha', 'beta', 'gamma'], "a change the core did not make is heard through the storage's watch")
  const before = reads
  await names()
  t.equal(reads, before, 'and cached again')
})

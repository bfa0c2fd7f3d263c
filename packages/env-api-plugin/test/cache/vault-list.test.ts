import { randomUUID } from 'node:crypto'
import t from 'tap'
import { createCoreCache } from '../../src/cache/cached-storage.js'
import { derivedFromList } from '../../src/cache/held-lists.js'
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

// What a surface derives from the list (the API's serialized answer) is made once per list the
// cache holds, made again after a change, and made every time when nothing is cached.
t.test('what is derived from a held list is made once per list, and again after a change', async (t) => {
  const storage = createMemoryStorage()
  t.teardown(() => storage.close())
  const cache = createCoreCache(storage)
  t.teardown(() => cache.close())
  await newVault(storage, 'alpha')
  let made = 0
  const key = {}
  const names = async (s: Storage) =>
    derivedFromList(await s.listVaults('p-ana'), key, (list) => {
      made++
      return list.map((v) => v.name).join(',')
    })

  t.equal(await names(cache.storage), 'alpha')
  t.equal(await names(cache.storage), 'alpha')
  t.equal(made, 1, 'made once for the held list')
  t.equal(
    derivedFromList(await cache.storage.listVaults('p-ana'), {}, () => 'other'),
    'other',
    'each key has its own',
  )

  await newVault(cache.storage, 'beta')
  t.equal(await names(cache.storage), 'alpha,beta', 'a change made here: made again')
  await newVault(storage, 'gamma')
  t.equal(await names(cache.storage), 'alpha,beta,gamma', 'a change made elsewhere: made again')
  t.equal(made, 3)

  // a storage without watchChanges is not cached: every list is derived anew
  const { watchChanges: _, ...unwatched } = storage
  const uncached = createCoreCache(unwatched as Storage)
  t.teardown(() => uncached.close())
  made = 0
  await names(uncached.storage)
  await names(uncached.storage)
  t.equal(made, 2, 'nothing held: made each time')
})

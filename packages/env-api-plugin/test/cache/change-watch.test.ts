import t from 'tap'
import { createMemoryStorage, runChangeWatchContract } from '../../src/testing/index.js'

// watchChanges and the core's caches (issue 20) on the memory store, which is its own database:
// the "other store" is itself. SQLite and PostgreSQL run the same cases with a second store
// on the same database (packages/storage-*/test/change-watch.test.ts).
t.test('change watch on the memory store', async (t) => {
  runChangeWatchContract(t, async () => {
    const store = createMemoryStorage()
    return { first: store, another: async () => store, close: () => store.close() }
  })
})

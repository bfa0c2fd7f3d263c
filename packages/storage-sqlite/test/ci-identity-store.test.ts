import t from 'tap'
import { ciIdentityStoreContract } from '@envkeep/env-api-plugin/testing'
import { createSqliteStorage } from '../src/index.js'

// The shared CI-identity contract, on SQLite :memory:.
for (const c of ciIdentityStoreContract) {
  t.test(c.name, () =>
    c.run(async () => {
      const storage = await createSqliteStorage({ filename: ':memory:' })
      return { store: storage, close: () => storage.close() }
    }),
  )
}

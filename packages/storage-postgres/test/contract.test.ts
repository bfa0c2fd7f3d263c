import t from 'tap'
import {
  ciIdentityStoreContract,
  oauthStoreContract,
  runHistoryStoreContract,
  runVaultStoreContract,
  runWebhookStoreContract,
} from '@envkeep/env-api-plugin/testing'
import { withTestDatabase } from '@envkeep/test-support'
import { createPostgresStorage, type PostgresStorage } from '../src/index.js'
import { createPostgresProbe } from './probe.js'

// The shared contract suites, unchanged, on PostgreSQL: each case on a fresh schema of one
// throw-away database.

t.test('the storage contracts on PostgreSQL', async (t) => {
  const url = await withTestDatabase(t)
  if (!url) return
  let n = 0
  const fresh = (): Promise<PostgresStorage> => createPostgresStorage({ connectionString: url, schema: `c${++n}`, pool: 4 })

  await t.test('vault store', async (t) => {
    runVaultStoreContract(t, async () => {
      const storage = await fresh()
      return { store: storage, probe: createPostgresProbe(storage), close: () => storage.close() }
    })
  })
  await t.test('history store', async (t) => {
    runHistoryStoreContract(t, async () => {
      const storage = await fresh()
      return { store: storage, probe: createPostgresProbe(storage), close: () => storage.close() }
    })
  })
  await t.test('webhook store', async (t) => {
    runWebhookStoreContract(t, async () => {
      const storage = await fresh()
      return { store: storage, close: () => storage.close() }
    })
  })
  await t.test('OAuth store', async (t) => {
    for (const c of oauthStoreContract) {
      await t.test(c.name, () =>
        c.run(async () => {
          const storage = await fresh()
          return { store: storage, close: () => storage.close() }
        }),
      )
    }
  })
  await t.test('CI identity store', async (t) => {
    for (const c of ciIdentityStoreContract) {
      await t.test(c.name, () =>
        c.run(async () => {
          const storage = await fresh()
          return { store: storage, close: () => storage.close() }
        }),
      )
    }
  })
})

import t from 'tap'
import {
  ciIdentityStoreContract,
  oauthStoreContract,
  runHistoryStoreContract,
  runOverrideStoreContract,
  runWebhookStoreContract,
} from '@envkeep/env-api-plugin/testing'
import { freshStores } from './contract-fixture.js'
import { createPostgresProbe } from './probe.js'

// The shared history, webhook, OAuth and CI identity contracts, unchanged, on PostgreSQL.

t.test('the other storage contracts on PostgreSQL', async (t) => {
  const fresh = await freshStores(t)
  if (!fresh) return
  await t.test('history store', async (t) => {
    runHistoryStoreContract(t, async () => {
      const storage = await fresh()
      return { store: storage, probe: createPostgresProbe(storage), close: () => storage.close() }
    })
  })
  await t.test('override store', async (t) => {
    runOverrideStoreContract(t, async () => {
      const storage = await fresh()
      return { store: storage, close: () => storage.close() }
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

import t from 'tap'
import {
  ciIdentityStoreContract,
  createMemoryStorage,
  oauthStoreContract,
  runHistoryStoreContract,
  runVaultStoreContract,
  runWebhookStoreContract,
  runOverrideStoreContract,
} from '../../src/testing/index.js'

// The reference store passes the contract suites it ships with: as is, and
// yielding to the event loop between the steps of every transaction (as a
// networked database does), where only rules kept inside a transaction hold.
for (const yieldBetweenSteps of [false, true]) {
  t.test(`vault store contract on memory${yieldBetweenSteps ? ', yielding between steps' : ''}`, async (t) => {
    runVaultStoreContract(t, async () => {
      const storage = createMemoryStorage({ yieldBetweenSteps })
      return { store: storage, probe: storage.probe, close: () => storage.close() }
    })
  })
  t.test(`history store contract on memory${yieldBetweenSteps ? ', yielding between steps' : ''}`, async (t) => {
    runHistoryStoreContract(t, async () => {
      const storage = createMemoryStorage({ yieldBetweenSteps })
      return { store: storage, probe: storage.probe, close: () => storage.close() }
    })
  })
  t.test(`override store contract on memory${yieldBetweenSteps ? ', yielding between steps' : ''}`, async (t) => {
    runOverrideStoreContract(t, async () => {
      const storage = createMemoryStorage({ yieldBetweenSteps })
      return { store: storage, close: () => storage.close() }
    })
  })
  t.test(`webhook store contract on memory${yieldBetweenSteps ? ', yielding between steps' : ''}`, async (t) => {
    runWebhookStoreContract(t, async () => {
      const storage = createMemoryStorage({ yieldBetweenSteps })
      return { store: storage, close: () => storage.close() }
    })
  })
  t.test(`OAuth store contract on memory${yieldBetweenSteps ? ', yielding between steps' : ''}`, async (t) => {
    for (const c of oauthStoreContract) {
      t.test(c.name, () =>
        c.run(async () => {
          const storage = createMemoryStorage({ yieldBetweenSteps })
          return { store: storage, close: () => storage.close() }
        }),
      )
    }
  })
  t.test(`CI identity store contract on memory${yieldBetweenSteps ? ', yielding between steps' : ''}`, async (t) => {
    for (const c of ciIdentityStoreContract) {
      t.test(c.name, () =>
        c.run(async () => {
          const storage = createMemoryStorage({ yieldBetweenSteps })
          return { store: storage, close: () => storage.close() }
        }),
      )
    }
  })
}

import t from 'tap'
import { runVaultStoreContract } from '@envkeep/env-api-plugin/testing'
import { freshStores } from './contract-fixture.js'
import { createPostgresProbe } from './probe.js'

// The shared vault store contract, unchanged, on PostgreSQL (the other halves:
// contract-more.test.ts): each case on a fresh schema of one throw-away database.

t.test('the vault store contract on PostgreSQL', async (t) => {
  const fresh = await freshStores(t)
  if (!fresh) return
  runVaultStoreContract(t, async () => {
    const storage = await fresh()
    return { store: storage, probe: createPostgresProbe(storage), close: () => storage.close() }
  })
})

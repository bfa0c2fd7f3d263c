import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { runHistoryStoreContract, runOverrideStoreContract, runVaultStoreContract, runWebhookStoreContract } from '@envkeep/env-api-plugin/testing'
import { createSqliteStorage } from '../src/index.js'
import { createSqliteProbe } from './vault-probe.js'

// The shared vault store contract, on SQLite in memory …
t.test('contract on :memory:', async (t) => {
  runVaultStoreContract(t, async () => {
    const storage = await createSqliteStorage({ filename: ':memory:' })
    return { store: storage, probe: createSqliteProbe(storage.database), close: () => storage.close() }
  })
})

// … and on a file (WAL), through the composed storage whose methods are bound copies.
t.test('contract on a file, through createSqliteStorage', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'envkeep-vault-store-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  let n = 0
  runVaultStoreContract(t, async () => {
    const storage = await createSqliteStorage({ filename: join(dir, `db-${++n}.sqlite`) })
    return { store: storage, probe: createSqliteProbe(storage.database), close: () => storage.close() }
  })
})

// The history contract, on a file through createSqliteStorage (history rows go with the vault store's).
t.test('history store contract on a file', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'envkeep-history-store-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  let n = 0
  runHistoryStoreContract(t, async () => {
    const storage = await createSqliteStorage({ filename: join(dir, `db-${++n}.sqlite`) })
    return { store: storage, probe: createSqliteProbe(storage.database), close: () => storage.close() }
  })
})

// The webhook contract, on a file through createSqliteStorage (deliveries are made from its pushes).
t.test('webhook store contract on a file', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'envkeep-webhook-store-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  let n = 0
  runWebhookStoreContract(t, async () => {
    const storage = await createSqliteStorage({ filename: join(dir, `db-${++n}.sqlite`) })
    return { store: storage, close: () => storage.close() }
  })
})

t.test('override store contract on a file', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'envkeep-override-store-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  let n = 0
  runOverrideStoreContract(t, async () => {
    const storage = await createSqliteStorage({ filename: join(dir, `db-${++n}.sqlite`) })
    return { store: storage, close: () => storage.close() }
  })
})

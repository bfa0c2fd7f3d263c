import t from 'tap'
import { randomUUID } from 'node:crypto'
import { ADMINISTRATOR, createEnvkeepCore, createVaultCrypto } from '../../src/index.js'
import { createMemoryStorage, testLogEntry } from '../../src/testing/index.js'
import { createTestKeyring } from '../../src/testing/keyring.js'

// A data-key rotation holds no lock while it seals: it reads the vault's secrets, seals them
// again, and swaps them in only if nothing changed meanwhile (swapWrappedKey, compare-and-set).
// A value written between the read and the swap makes it read and seal again: nothing is lost.

t.test('a value written while the vault is resealed is resealed too (the swap is refused, read again)', async (t) => {
  const storage = createMemoryStorage()
  t.teardown(() => storage.close())
  const keyring = createTestKeyring()
  const { domain } = createEnvkeepCore({ storage, keyring, people: { findPersonByEmail: async () => null } })
  const vaultId = randomUUID()
  await storage.createVault(
    { id: vaultId, name: 'shop', ownerId: 'ana', plan: 'self-hosted', environments: [{ name: 'development', ownersOnly: false }], now: new Date() },
    testLogEntry({ vaultId, action: 'vault_created' }),
  )
  const write = async (name: string, value: string) => {
    await domain.writeVariable(ADMINISTRATOR, { vaultId, environment: 'development', name, value, mode: 'set' })
  }
  await write('A', 'canary-first')
  const keyBefore = await storage.getWrappedKey(vaultId)

  // the store's signal: the rotation is about to swap; a writer lands first, under the old key
  const swap = storage.swapWrappedKey.bind(storage)
  const answers: string[] = []
  storage.swapWrappedKey = async (change) => {
    if (change.kind === 'reseal' && answers.length === 0) await write('B', 'canary-meanwhile')
    const r = await swap(change)
    answers.push(r.ok ? 'ok' : r.reason)
    return r
  }
  t.equal(await domain.rotateDataKey(ADMINISTRATOR, vaultId), true)
  t.same(answers, ['changed', 'ok'], 'refused once, then read again and swapped')
  t.not(Buffer.from((await storage.getWrappedKey(vaultId))!).toString('hex'), Buffer.from(keyBefore!).toString('hex'), 'a new data key')

  const fresh = createVaultCrypto(storage, keyring)
  const { variables } = await storage.readCurrent(vaultId, 'development')
  t.same(await fresh.openValues(vaultId, 'development', variables), { A: 'canary-first', B: 'canary-meanwhile' }, 'both open under the new key')
})

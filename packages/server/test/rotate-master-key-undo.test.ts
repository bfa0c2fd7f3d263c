import t from 'tap'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { createLocalKeyring } from '@envkeep/env-api-plugin'
import { storeFirstKey, testLogEntry } from '@envkeep/env-api-plugin/testing'
import { createSqliteStorage } from '@envkeep/storage-sqlite'
import { readKeyFile } from '../src/keyring-file.js'
import { runCli, tempDir } from './helpers.js'

// The master-key rotation swaps each data key on its own (compare-and-set, no transaction held
// across the keyring), so a first pass that fails half-way must put back the keys it already
// rewrapped before it drops the new key: else they would be under a key nobody has.

const LAST = 'ffffffff-ffff-4fff-bfff-ffffffffffff' // after every other vault id: the pass fails there, last

t.test('a rotation whose first pass fails puts every key back under the old key and drops the new one', async (t) => {
  const dir = tempDir(t)
  const env = { ENVKEEP_DATA_DIR: join(dir, 'data') }
  t.equal((await runCli(['init'], env, '', dir)).code, 0)
  const user = await runCli(
    ['admin', 'user', 'create', '--email', 'ana@example.com', '--name', 'Ana', '--password-stdin', '--json'],
    env,
    'canary-undo-password-1234\n',
    dir,
  )
  t.equal(user.code, 0, user.stderr)
  t.equal((await runCli(['admin', 'vault', 'create', '--name', 'shop', '--owner', 'ana@example.com'], env, '', dir)).code, 0)
  t.equal((await runCli(['admin', 'var', 'set', '--vault', 'shop', '--env', 'development', 'API_KEY'], env, 'canary-undo-value', dir)).code, 0)
  const keyFile = join(dir, 'data', 'master.key')
  const oldKey = readKeyFile(keyFile)!.key
  const db = join(dir, 'data', 'envkeep.db')
  const before = await createSqliteStorage({ filename: db })
  let shop: string
  try {
    shop = (await before.findVaults({ name: 'shop' }))[0]!.id
    t.ok(shop < LAST)
    // a vault whose key opens under no master key: the rotation stops there
    await before.createVault(
      { id: LAST, name: 'broken', ownerId: 'nobody', plan: 'self-hosted', environments: [], now: new Date() },
      testLogEntry({ vaultId: LAST, action: 'vault_created' }),
    )
    await storeFirstKey(before, LAST, randomBytes(60))
  } finally {
    await before.close()
  }

  const r = await runCli(['admin', 'rotate-master-key'], env, '', dir)
  t.equal(r.code, 1)
  t.match(r.stderr, 'could not rewrap the data keys with the new key; nothing changed')
  t.notOk(existsSync(`${keyFile}.new`), 'the new key is dropped')
  t.same(Buffer.from(readKeyFile(keyFile)!.key), Buffer.from(oldKey), 'the key file is as it was')
  const after = await createSqliteStorage({ filename: db })
  try {
    const wrapped = await after.getWrappedKey(shop)
    t.ok(wrapped)
    t.ok(
      await createLocalKeyring(oldKey)
        .unwrap(wrapped!, shop)
        .then(
          () => true,
          () => false,
        ),
      "the first vault's key is under the old key again",
    )
  } finally {
    await after.close()
  }
})

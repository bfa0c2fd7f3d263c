import t from 'tap'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createLocalKeyring, createVaultCrypto } from '@envkeep/env-api-plugin'
import { mintSignIn, stagedValues } from '@envkeep/env-api-plugin/testing'
import { createSqliteStorage } from '@envkeep/storage-sqlite'
import { spawnNode } from '@envkeep/test-support'
import { readKeyFile } from '../src/keyring-file.js'
import { freePort, runCli, tempDir } from './helpers.js'

// Hardening finding 2, second half: `admin rotate-data-keys` gives every
// vault a new data key and seals every stored value again (staged values of
// pending pushes too), while a server runs: the server keeps reading and
// writing, and an old copy of the wrapped keys opens nothing written after.

const BIN = fileURLToPath(new URL('../dist/bin.js', import.meta.url))

t.test('rotate-data-keys: online, values and pushes kept, an old wrapped key opens nothing written after', async (t) => {
  const dir = tempDir(t)
  const data = join(dir, 'data')
  const db = join(data, 'envkeep.db')
  const env = { ENVKEEP_DATA_DIR: data }
  const cli = (argv: string[], input = '') => runCli(argv, env, input, dir)
  t.equal((await cli(['init'])).code, 0)
  const user = await cli(['admin', 'user', 'create', '--email', 'ana@example.com', '--name', 'Ana', '--password-stdin', '--json'], 'canary-dk-password-1234')
  const ana = (JSON.parse(user.stdout.trim()) as { account: { id: string } }).account.id
  const made = await cli(['admin', 'vault', 'create', '--name', 'shop', '--owner', 'ana@example.com', '--json'])
  const vault = (JSON.parse(made.stdout.trim()) as { vault: { id: string } }).vault.id
  t.equal((await cli(['admin', 'vault', 'create', '--name', 'empty', '--owner', 'ana@example.com'])).code, 0, 'a vault without values has no key')
  t.equal((await cli(['admin', 'var', 'set', '--vault', 'shop', '--env', 'development', 'BEFORE'], 'value-before')).code, 0)
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const storage = await createSqliteStorage({ filename: db })
  t.teardown(() => storage.close())
  const { accessToken } = await mintSignIn(storage, { baseUrl: base, personId: ana })
  const headers = { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json' }
  const server = spawnNode(BIN, ['start'], { cwd: dir, env: { ...env, ENVKEEP_PORT: String(port) } })
  t.teardown(() => {
    if (server.child.exitCode === null) server.child.kill('SIGKILL')
  })
  await server.waitFor('stdout', /envkeep-server started/)
  const read = () => fetch(`${base}/api/env/${vault}/development`, { headers })
  const push = (variables: Record<string, string>) =>
    fetch(`${base}/api/env/${vault}/development/imports`, { method: 'POST', headers, body: JSON.stringify({ variables }) })

  t.same(((await (await read()).json()) as { variables: unknown }).variables, { BEFORE: 'value-before' }, 'the server holds the data key now')
  const pending = await push({ STAGED: 'value-staged' })
  t.equal(pending.status, 201)
  const pendingId = ((await pending.json()) as { import: string }).import
  const oldWrapped = await storage.getWrappedKey(vault) // what an old backup holds

  const rotated = await spawnNode(BIN, ['admin', 'rotate-data-keys', '--json'], { cwd: dir, env }).done
  t.equal(rotated.code, 0, rotated.stderr)
  t.same(JSON.parse(rotated.stdout.trim()), { ok: true, rotated: 1, skipped: 1 })
  const newWrapped = await storage.getWrappedKey(vault)
  t.ok(oldWrapped && newWrapped && !Buffer.from(oldWrapped).equals(Buffer.from(newWrapped)), 'a new data key')

  // the server still holds the old key: its next write is refused by storage and sealed again
  const after = await push({ AFTER_PUSH: 'value-after-push' })
  t.equal(after.status, 201, 'a push right after the rotation')
  t.equal((await cli(['admin', 'var', 'set', '--vault', 'shop', '--env', 'development', 'AFTER'], 'value-after')).code, 0)
  const r = await read()
  t.equal(r.status, 200, 'and its next read opens the values sealed again')
  t.same(((await r.json()) as { variables: unknown }).variables, { AFTER: 'value-after', BEFORE: 'value-before' })

  // every value opens under the new key (a fresh process's view), staged values of pushes too
  const ring = createLocalKeyring(readKeyFile(join(data, 'master.key'))!.key)
  const crypto = createVaultCrypto(storage, ring)
  t.same(
    await crypto.openValues(vault, 'development', await stagedValues(storage, pendingId)),
    { STAGED: 'value-staged' },
    'a push pending across the rotation still opens',
  )
  const afterId = ((await after.json()) as { import: string }).import
  t.same(await crypto.openValues(vault, 'development', await stagedValues(storage, afterId)), { AFTER_PUSH: 'value-after-push' })

  // the old wrapped key, with the master key, opens nothing written after the rotation
  const oldCrypto = createVaultCrypto({ ...storage, getWrappedKey: async () => oldWrapped } as typeof storage, ring)
  const written = (await storage.readCurrent(vault, 'development', { names: ['AFTER'] })).variables[0]!
  await t.rejects(oldCrypto.openValues(vault, 'development', [written]), { code: 'decrypt_failed' }, 'a value written after')
  const resealed = (await storage.readCurrent(vault, 'development', { names: ['BEFORE'] })).variables[0]!
  await t.rejects(oldCrypto.openValues(vault, 'development', [resealed]), { code: 'decrypt_failed' }, 'nor one sealed again')

  // resumable: --from a later id leaves this vault as it is
  const later = await spawnNode(BIN, ['admin', 'rotate-data-keys', '--from', 'ffffffff-ffff-4fff-bfff-ffffffffffff', '--json'], { cwd: dir, env }).done
  t.same(JSON.parse(later.stdout.trim()), { ok: true, rotated: 0, skipped: 0 })
  t.ok(Buffer.from((await storage.getWrappedKey(vault))!).equals(Buffer.from(newWrapped!)))
  server.child.kill('SIGTERM')
  await server.done
})

import { readFileSync } from 'node:fs'
import { changeSetById, versionsOf } from '@envkeep/env-api-plugin/testing'
import { join } from 'node:path'
import t from 'tap'
import { createLocalKeyring, createVaultCrypto, pruneHistory } from '@envkeep/env-api-plugin'
import { createSqliteStorage } from '@envkeep/storage-sqlite'
import { runCli, tempDir } from './helpers.js'

// Issue 12 on SQLite, through the server's admin commands: `admin history` (names only) and
// `admin restore` (recovery without a browser), logged as the server administrator; and
// retention with an injected clock.

t.test('admin history lists change sets; admin restore brings an environment back to a point', async (t) => {
  const dir = tempDir(t)
  const data = join(dir, 'data')
  const env = { ENVKEEP_DATA_DIR: data }
  const cli = (argv: string[], input = '') => runCli(argv, env, input, dir)
  t.equal((await cli(['init'])).code, 0)
  t.equal((await cli(['admin', 'user', 'create', '--email', 'ana@example.com', '--name', 'Ana', '--password-stdin'], 'canary-history-password-1')).code, 0)
  t.equal((await cli(['admin', 'vault', 'create', '--name', 'shop', '--owner', 'ana@example.com'])).code, 0)
  const set = (name: string, value: string) => cli(['admin', 'var', 'set', '--vault', 'shop', '--env', 'production', name], value)
  t.equal((await set('DB_URL', 'canary-history-first\nline 2')).code, 0)
  t.equal((await set('DB_URL', 'canary-history-second')).code, 0)
  t.equal((await set('TOKEN', 'canary-history-token')).code, 0)

  const listed = await cli(['admin', 'history', '--vault', 'shop', '--env', 'production', '--json'])
  t.equal(listed.code, 0, listed.stderr)
  const changes = (JSON.parse(listed.stdout) as { changes: { id: string; how: string; by: string | null; added: string[]; changed: string[] }[] }).changes
  t.same(
    changes.map((c) => [c.how, c.by, c.added, c.changed]),
    [
      ['admin', null, ['TOKEN'], []],
      ['admin', null, [], ['DB_URL']],
      ['admin', null, ['DB_URL'], []],
    ],
    'newest first, by the server administrator',
  )
  t.notMatch(listed.stdout, 'canary-history', 'names only, never values')
  const text = await cli(['admin', 'history', '--vault', 'shop', '--env', 'production'])
  t.match(text.stdout, new RegExp(`^${changes[2]!.id}  \\S+  admin    administrator  added DB_URL$`, 'm'))

  const restored = await cli(['admin', 'restore', '--vault', 'shop', '--env', 'production', '--change', changes[2]!.id, '--json'])
  t.equal(restored.code, 0, restored.stderr)
  t.same(JSON.parse(restored.stdout), {
    ok: true,
    vault: JSON.parse(restored.stdout).vault,
    environment: 'production',
    restoredTo: changes[2]!.id,
    change: JSON.parse(restored.stdout).change,
    written: ['DB_URL'],
    deleted: ['TOKEN'],
  })
  t.equal((await cli(['admin', 'restore', '--vault', 'shop', '--env', 'development', '--change', changes[2]!.id])).code, 1, 'a change of another environment')
  t.equal((await cli(['admin', 'restore', '--vault', 'shop', '--env', 'production', '--change', 'no-such-change'])).code, 1)

  // the values, opened with the master key: exactly the first moment
  const storage = await createSqliteStorage({ filename: join(data, 'envkeep.db') })
  t.teardown(() => storage.close())
  const keyring = createLocalKeyring(Buffer.from(readFileSync(join(data, 'master.key'), 'utf8').trim(), 'base64url'))
  const [vault] = await storage.findVaults({ name: 'shop' })
  const crypto = createVaultCrypto(storage, keyring)
  const now = await crypto.openValues(vault!.id, 'production', (await storage.readCurrent(vault!.id, 'production')).variables)
  t.same(now, { DB_URL: 'canary-history-first\nline 2' })
  const [entry] = await storage.listAccessLog(vault!.id, { action: 'environment_restored', limit: 1 })
  t.equal(entry?.personId, null)
  t.equal(entry?.clientId, 'envkeep-server')
  t.same([...(entry?.names ?? [])].sort(), ['DB_URL', 'TOKEN'])

  // data-key rotation re-seals the kept versions: the first version still opens, under the new key
  const keyBefore = await storage.getWrappedKey(vault!.id)
  const rotated = await cli(['admin', 'rotate-data-keys'])
  t.equal(rotated.code, 0, rotated.stderr)
  t.notSame(await storage.getWrappedKey(vault!.id), keyBefore, 'a new data key')
  const first = await changeSetById(storage, vault!.id, changes[2]!.id)
  t.same(await createVaultCrypto(storage, keyring).openHistory(vault!.id, 'production', first!.id, 'after', first!.entries), {
    DB_URL: 'canary-history-first\nline 2',
  })

  // a deleted vault leaves one server-level audit line, listed by admin audit
  t.equal((await cli(['admin', 'vault', 'create', '--name', 'short-lived', '--owner', 'ana@example.com'])).code, 0)
  const [gone] = await storage.findVaults({ name: 'short-lived' })
  const [ana] = await storage.listMembers(gone!.id)
  t.ok((await storage.deleteVault({ vaultId: gone!.id, by: ana!.personId, at: new Date('2026-11-25T10:00:00Z') })).ok)
  const audit = await cli(['admin', 'audit', '--json'])
  t.equal(audit.code, 0, audit.stderr)
  t.same(JSON.parse(audit.stdout).entries, [
    { at: '2026-11-25T10:00:00.000Z', by: 'ana@example.com', action: 'vault_deleted', vault: { id: gone!.id, name: 'short-lived' } },
  ])

  // retention: with the clock a year and a day on, versions past 365 days go, but each variable's last 10 stay
  for (let i = 0; i < 12; i++) t.equal((await set('CHURN', `v${i}`)).code, 0)
  const later = new Date(Date.now() + 366 * 86_400_000)
  const pruned = await pruneHistory({ storage, now: () => later }, 365)
  t.equal(pruned, 2 + 0, 'CHURN keeps its last 10 of 12; DB_URL and TOKEN have fewer than 10 each')
  t.equal((await versionsOf(storage, vault!.id, 'production', 'CHURN', 50)).length, 10)
  t.equal((await versionsOf(storage, vault!.id, 'production', 'DB_URL', 50)).length, 3)
  t.equal(await pruneHistory({ storage, now: () => new Date() }, 365), 0, 'nothing is old today')
})

import { mkdtempSync, rmSync } from 'node:fs'
import { type FileHandle, open } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomUUID } from 'node:crypto'
import Database from 'better-sqlite3'
import t from 'tap'
import { testLogEntry } from '@envkeep/env-api-plugin/testing'
import { createSqliteStorage } from '../src/index.js'

// Issue 20: the runner's batch commits without syncing on the event loop, then syncs the
// WAL file on the thread pool; a write answers only after that sync. The sync is watched
// by wrapping FileHandle.prototype.datasync (every FileHandle shares it).
t.test('a write answers only after the WAL is synced, off the event loop; the row is committed before', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'envkeep-wal-sync-'))
  const file = join(dir, 'db.sqlite')
  const storage = await createSqliteStorage({ filename: file })
  const other = new Database(file, { readonly: true })
  t.teardown(async () => {
    other.close()
    await storage.close()
    rmSync(dir, { recursive: true, force: true })
  })
  const vaultId = randomUUID()
  await storage.createVault(
    { id: vaultId, name: 'shop', ownerId: 'p-ana', plan: 'self-hosted', environments: [{ name: 'development', ownersOnly: false }], now: new Date() },
    testLogEntry({ vaultId, action: 'vault_created' }),
  )

  const probe = await open(file, 'r')
  const proto = Object.getPrototypeOf(probe) as FileHandle
  await probe.close()
  const original = proto.datasync
  const synced: string[] = []
  let release!: () => void
  const held = new Promise<void>((r) => (release = r))
  let asked!: () => void
  const syncAsked = new Promise<void>((r) => (asked = r))
  proto.datasync = async function (this: FileHandle) {
    asked()
    await held
    synced.push('synced')
    return original.call(this)
  }
  t.teardown(() => {
    proto.datasync = original
  })

  let answered = false
  const append = storage.appendAccessLog(testLogEntry({ vaultId, action: 'read', environment: 'development', names: ['API_KEY'] })).then((r) => {
    answered = true
    return r
  })
  await syncAsked
  const seen = other.prepare("select count(*) as n from access_log where action = 'read'").get() as { n: number }
  t.equal(seen.n, 1, 'the entry is committed (another connection sees it) while the sync runs')
  await new Promise((r) => setImmediate(r))
  t.equal(answered, false, 'the write has not answered before its sync is done')
  release()
  t.same(await append, { ok: true, value: undefined })
  t.same(synced, ['synced'], 'one sync for the write')
})

t.test("durability 'normal' never syncs at commit, so nothing waits for a sync", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'envkeep-wal-sync-'))
  const storage = await createSqliteStorage({ filename: join(dir, 'db.sqlite'), durability: 'normal' })
  t.teardown(async () => {
    await storage.close()
    rmSync(dir, { recursive: true, force: true })
  })
  const probe = await open(join(dir, 'db.sqlite'), 'r')
  const proto = Object.getPrototypeOf(probe) as FileHandle
  await probe.close()
  const original = proto.datasync
  let syncs = 0
  proto.datasync = function (this: FileHandle) {
    syncs++
    return original.call(this)
  }
  t.teardown(() => {
    proto.datasync = original
  })
  const vaultId = randomUUID()
  await storage.createVault(
    { id: vaultId, name: 'shop', ownerId: 'p-ana', plan: 'self-hosted', environments: [{ name: 'development', ownersOnly: false }], now: new Date() },
    testLogEntry({ vaultId, action: 'vault_created' }),
  )
  await storage.appendAccessLog(testLogEntry({ vaultId, action: 'read', environment: 'development', names: ['A'] }))
  t.equal(syncs, 0)
})

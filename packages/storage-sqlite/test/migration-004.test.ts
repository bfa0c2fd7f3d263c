import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { Kysely, SqliteDialect } from 'kysely'
import { Migrator } from 'kysely/migration'
import t from 'tap'
import { testLogEntry } from '@envkeep/env-api-plugin/testing'
import { createSqliteStorage } from '../src/index.js'
import { m001Vaults } from '../src/migrations/001-vaults.js'
import { m002Oauth } from '../src/migrations/002-oauth.js'
import { m003Accounts } from '../src/migrations/003-accounts.js'

// A database made before migration 004 (the migrations as they landed)
// keeps its access log, ids included, and then records subject, detail and
// vault creation.
t.test('migration 004 keeps an existing access log and its ids', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'envkeep-m004-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const filename = join(dir, 'old.db')
  const old = new Kysely<unknown>({ dialect: new SqliteDialect({ database: new Database(filename) }) })
  const migrator = new Migrator({
    db: old,
    provider: { getMigrations: async () => ({ '001_vaults': m001Vaults, '002_oauth': m002Oauth, '003_accounts': m003Accounts }) },
  })
  t.error((await migrator.migrateToLatest()).error)
  const raw = new Database(filename)
  raw.prepare("insert into vaults (id, name, plan, require_second_person, created_at) values ('v1', 'shop', 'self-hosted', 0, 1)").run()
  raw.prepare("insert into members (vault_id, person_id, role) values ('v1', 'p1', 'owner')").run()
  for (const [id, action] of [
    [7, 'read'],
    [9, 'member_added'],
  ] as const) {
    raw
      .prepare("insert into access_log (id, vault_id, at, person_id, action, environment, names) values (?, 'v1', 5, 'p1', ?, 'development', '[\"A\"]')")
      .run(id, action)
  }
  raw.close()
  await old.destroy()

  const storage = await createSqliteStorage({ filename })
  t.teardown(() => storage.close())
  const rows = await storage.listAccessLog('v1', { limit: 10 })
  t.same(
    rows.map((r) => [r.id, r.action, r.personId, r.names, r.subject, r.detail]),
    [
      [9, 'member_added', 'p1', ['A'], null, null],
      [7, 'read', 'p1', ['A'], null, null],
    ],
  )
  await storage.appendAccessLog(testLogEntry({ vaultId: 'v1', action: 'vault_created', subject: 'p1', detail: 'owner' }))
  const [latest] = await storage.listAccessLog('v1', { limit: 1 })
  t.equal(latest?.action, 'vault_created', 'the new action is allowed')
  t.ok((latest?.id ?? 0) > 9, 'ids keep growing past the old ones')
  t.same([latest?.subject, latest?.detail], ['p1', 'owner'])
  // 009: the action is plain text (the list is the domain's ACCESS_ACTIONS), so a new action needs no rebuild
  await storage.appendAccessLog(testLogEntry({ vaultId: 'v1', action: 'a_later_action' as 'read' }))
  const [later] = await storage.listAccessLog('v1', { limit: 1 })
  t.equal(later?.action, 'a_later_action', 'an action the schema never heard of is kept as text')
})

import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { checkStagedUsageBackfill } from '@envkeep/env-api-plugin/testing'
import { createSqliteStorage, type SqliteStorage } from '../src/index.js'

// A database made before migration 015 with pushes pending, applied and rejected: the
// migration counts what the pending ones stage, and the count goes on from there.
t.test('migration 015 counts the staged values of the pushes pending before it', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'envkeep-m015-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const filename = join(dir, 'old.db')
  await checkStagedUsageBackfill(
    () => createSqliteStorage({ filename }),
    async (s) => {
      const db = (s as SqliteStorage).database.sqlite
      db.prepare('drop table staged_usage').run()
      db.prepare(`delete from kysely_migration where name = '015_staged_usage'`).run()
    },
  )
  t.pass('the usage after the migration is the recount')
})

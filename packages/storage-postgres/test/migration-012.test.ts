import t from 'tap'
import { sql } from 'kysely'
import { withTestDatabase } from '@envkeep/test-support'
import { checkStagedUsageBackfill } from '@envkeep/env-api-plugin/testing'
import { createPostgresStorage, type PostgresStorage } from '../src/index.js'

// A database made before migration 012 with pushes pending, applied and rejected: the
// migration counts what the pending ones stage, and the count goes on from there.
t.test('migration 012 counts the staged values of the pushes pending before it', async (t) => {
  const url = await withTestDatabase(t)
  if (!url) return
  await checkStagedUsageBackfill(
    () => createPostgresStorage({ connectionString: url, pool: 2 }),
    async (s) => {
      const db = (s as PostgresStorage).database.db
      await sql`drop table staged_usage`.execute(db)
      await sql`delete from envkeep_storage_migration where name = '012_staged_usage'`.execute(db)
    },
  )
  t.pass('the usage after the migration is the recount')
})

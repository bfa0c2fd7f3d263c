import { withTestDatabase } from '@envkeep/test-support'
import { createPostgresStorage, type PostgresStorage } from '../src/index.js'

/**
 * A maker of fresh stores for the shared contract suites: each call a new schema of one
 * throw-away database (null without a PostgreSQL server, outside CI). The suites are spread
 * over several test files so that none comes near tap's per-file timeout on a busy machine.
 */
export async function freshStores(t: Parameters<typeof withTestDatabase>[0]): Promise<(() => Promise<PostgresStorage>) | null> {
  const url = await withTestDatabase(t)
  if (!url) return null
  let n = 0
  return () => createPostgresStorage({ connectionString: url, schema: `c${++n}`, pool: 4 })
}

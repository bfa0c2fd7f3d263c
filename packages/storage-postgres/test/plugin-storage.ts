import { withTestDatabase } from '@envkeep/test-support'
import { createPostgresStorage, type PostgresStorage } from '../src/index.js'

/**
 * The store the plugin's route tests run on when `ENVKEEP_TEST_STORAGE=postgres`
 * (`scripts/test-postgres.mjs`): this package hands its storage to the plugin's tests, so the
 * plugin never depends on this package (which depends on the plugin). The plugin's
 * `test/storage-under-test.ts` loads this file by path (or `ENVKEEP_TEST_STORAGE_MODULE`).
 */
export async function createStorageUnderTest(t: Parameters<typeof withTestDatabase>[0]): Promise<PostgresStorage> {
  const url = await withTestDatabase(t)
  if (!url) throw new Error('ENVKEEP_TEST_STORAGE=postgres needs ENVKEEP_TEST_DATABASE_URL')
  return createPostgresStorage({ connectionString: url, pool: 4 })
}

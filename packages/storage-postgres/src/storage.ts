import type { Storage } from '@envkeep/env-api-plugin'
import { createSqlStorage } from '@envkeep/storage-sql'
import { createPostgresChangeListener } from './change-listener.js'
import { openPostgres, type OpenPostgres, type PostgresOptions } from './database.js'
import { createPostgresRunner } from './sql-runner.js'

export interface PostgresStorage extends Storage {
  countRequest: NonNullable<Storage['countRequest']>
  peekRequests: NonNullable<Storage['peekRequests']>
  watchChanges: NonNullable<Storage['watchChanges']>
  /** the open pool and kysely instance, for the server's own stores (accounts) and tests */
  readonly database: OpenPostgres
  close(): Promise<void>
}

/** Opens the pool (running migrations) and returns the SQL core's stores over it, with the request counters several servers share. */
export async function createPostgresStorage(options: PostgresOptions): Promise<PostgresStorage> {
  const database = await openPostgres(options)
  const sql = createPostgresRunner(database)
  const storage = createSqlStorage(sql, {
    changes: createPostgresChangeListener(database, sql),
    sharedCounters: true,
    own: { database, close: () => database.close() },
  })
  const { countRequest, peekRequests } = storage
  if (!countRequest || !peekRequests) throw new Error('envkeep: the SQL core left out the shared request counters')
  return { ...storage, countRequest, peekRequests } satisfies PostgresStorage
}

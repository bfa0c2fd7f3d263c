import type { Storage } from '@envkeep/env-api-plugin'
import { createRateCounters, createSqlStorage } from '@envkeep/storage-sql'
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
  return createSqlStorage(sql, {
    changes: createPostgresChangeListener(database, sql),
    sharedCounters: true,
    own: { ...createRateCounters(sql), database, close: () => database.close() },
  }) satisfies PostgresStorage
}

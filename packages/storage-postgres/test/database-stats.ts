import { sql } from 'kysely'
import type { PostgresStorage } from '../src/index.js'

/**
 * A counter of the server's statistics for the store's database (`pg_stat_database`), its
 * own pending figures flushed first: committed transactions, or deadlocks.
 */
export async function databaseStat(store: PostgresStorage, column: 'xact_commit' | 'deadlocks'): Promise<number> {
  const db = store.database.db
  await sql`select pg_stat_force_next_flush()`.execute(db)
  const r = await sql<{ n: string }>`select ${sql.ref(column)} as n from pg_stat_database where datname = current_database()`.execute(db)
  return Number(r.rows[0]?.n)
}

/**
 * What `fn` costs in committed transactions, less what two looks at the counter cost by
 * themselves.
 */
export async function commitsOf(store: PostgresStorage) {
  const commits = () => databaseStat(store, 'xact_commit')
  const idle = -(await commits()) + (await commits())
  return async <T>(fn: () => Promise<T>): Promise<{ result: T; used: number }> => {
    const before = await commits()
    const result = await fn()
    return { result, used: (await commits()) - before - idle }
  }
}

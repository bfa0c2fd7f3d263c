import type { VaultStoreProbe } from '@envkeep/env-api-plugin/testing'
import { sql } from 'kysely'
import type { PostgresStorage } from '../src/index.js'

/**
 * The contract suite's probe on PostgreSQL: counts rows directly, and breaks chosen writes
 * with triggers that raise (dropped again by the returned function).
 */
export function createPostgresProbe(storage: PostgresStorage): VaultStoreProbe {
  const db = storage.database.db
  let seq = 0
  const count = async (q: ReturnType<typeof sql>): Promise<number> => Number(((await q.execute(db)).rows[0] as { n: string }).n)
  return {
    stagedValueCount: (importId) => count(sql`select count(*) as n from import_values where import_id = ${importId}`),
    variableCount: (vaultId, environment) => count(sql`select count(*) as n from variables where vault_id = ${vaultId} and environment = ${environment}`),
    importCount: (vaultId) => count(sql`select count(*) as n from imports where vault_id = ${vaultId}`),
    accessLogCount: (vaultId) => count(sql`select count(*) as n from access_log where vault_id = ${vaultId}`),
    lockWaiters: () => count(sql`select count(*) as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`),
    async breakWrites(what, name) {
      const fn = `test_break_${what}_${++seq}`
      const when = name === undefined ? sql`` : sql`when (new.name = ${sql.lit(name)})`
      await sql`create function ${sql.id(fn)}() returns trigger language plpgsql as $$ begin raise exception 'test: writes broken'; end $$`.execute(db)
      const events = what === 'access_log' ? sql`insert` : sql`insert or update`
      await sql`create trigger ${sql.id(fn)} before ${events} on ${sql.id(what)} for each row ${when} execute function ${sql.id(fn)}()`.execute(db)
      return async () => {
        await sql`drop trigger ${sql.id(fn)} on ${sql.id(what)}`.execute(db)
        await sql`drop function ${sql.id(fn)}()`.execute(db)
      }
    },
  }
}

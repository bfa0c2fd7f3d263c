import type { AccessLogEntry, OverrideChange, OverrideRow, OverrideStore } from '@envkeep/env-api-plugin'
import { sql, type Kysely } from 'kysely'
import { inTransaction, read } from './database.js'
import { bytes, copy, insertLog, ms, rows } from './rows.js'

type Q = Kysely<unknown>

/** Personal overrides on PostgreSQL (override-store.ts in the plugin): tables override_environments and overrides (migration 007). */
export class PostgresOverrideStore implements OverrideStore {
  readonly #db: Q

  constructor(db: Q) {
    this.#db = db
  }

  readOverrides(vaultId: string, environment: string, personId?: string): Promise<{ allowed: boolean; overrides: OverrideRow[] }> {
    return read(async () => {
      const allowed = await rows<{ one: number }>(
        this.#db,
        sql`select 1 as one from override_environments where vault_id = ${vaultId} and environment = ${environment}`,
      )
      const list = await rows<{ name: string; person_id: string; sealed: Buffer; updated_at: string }>(
        this.#db,
        sql`select name, person_id, sealed, updated_at from overrides
            where vault_id = ${vaultId} and environment = ${environment} and (${personId ?? null}::text is null or person_id = ${personId ?? null})
            order by name collate "C", person_id collate "C"`,
      )
      return {
        allowed: allowed.length > 0,
        overrides: list.map((r) => ({ name: r.name, personId: r.person_id, sealed: copy(r.sealed), updatedAt: new Date(ms(r.updated_at)) })),
      }
    })
  }

  changeOverride(change: OverrideChange, log: AccessLogEntry): Promise<boolean> {
    return inTransaction(this.#db, async (trx) => {
      // the environment's row is locked: a switch turned off cannot race a new override
      const env = await rows<{ one: number }>(
        trx,
        sql`select 1 as one from environments where vault_id = ${change.vaultId} and name = ${change.environment} for update`,
      )
      if (env.length === 0) return false
      let changed: number
      if (change.kind === 'allow') {
        const r = change.allow
          ? await sql`insert into override_environments (vault_id, environment) values (${change.vaultId}, ${change.environment}) on conflict do nothing`.execute(
              trx,
            )
          : await sql`delete from override_environments where vault_id = ${change.vaultId} and environment = ${change.environment}`.execute(trx)
        changed = Number(r.numAffectedRows ?? 0)
      } else if (change.sealed === null) {
        const r = await sql`delete from overrides where vault_id = ${change.vaultId} and environment = ${change.environment}
            and name = ${change.name} and person_id = ${change.personId}`.execute(trx)
        changed = Number(r.numAffectedRows ?? 0)
      } else {
        const allowed = await rows<{ one: number }>(
          trx,
          sql`select 1 as one from override_environments where vault_id = ${change.vaultId} and environment = ${change.environment}`,
        )
        if (allowed.length === 0) return false
        const r = await sql`insert into overrides (vault_id, environment, name, person_id, sealed, updated_at)
            values (${change.vaultId}, ${change.environment}, ${change.name}, ${change.personId}, ${bytes(change.sealed)}, ${change.now.getTime()})
            on conflict (vault_id, environment, name, person_id) do update set sealed = excluded.sealed, updated_at = excluded.updated_at`.execute(trx)
        changed = Number(r.numAffectedRows ?? 0)
      }
      if (changed === 0) return false
      await insertLog(trx, log)
      return true
    })
  }
}

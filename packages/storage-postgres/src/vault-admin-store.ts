import type { AccessLogEntry, AuditRow, VaultStore } from '@envkeep/env-api-plugin'
import { sql, type Kysely } from 'kysely'
import { inTransaction, read } from './database.js'
import { insertLog, ms, rows } from './rows.js'

type AdminMethods = Pick<VaultStore, 'renameVault' | 'deleteVault' | 'listAudit' | 'setEnvironmentRules'>

/**
 * Vault administration on PostgreSQL (issue 14): rename, delete with its server-level audit
 * row (the foreign keys' ON DELETE CASCADE take everything the vault holds), and an
 * environment's rules. Each locks the vault row first, as every change of a vault does.
 */
export class PostgresVaultAdminStore implements AdminMethods {
  readonly #db: Kysely<unknown>

  constructor(db: Kysely<unknown>) {
    this.#db = db
  }

  renameVault(input: { vaultId: string; name: string }, log: AccessLogEntry): Promise<boolean> {
    return inTransaction(this.#db, async (trx) => {
      const r = await sql`update vaults set name = ${input.name} where id = ${input.vaultId}`.execute(trx)
      if (Number(r.numAffectedRows ?? 0) === 0) return false
      await insertLog(trx, log)
      return true
    })
  }

  deleteVault(input: { vaultId: string; by: string | null; at: Date }): Promise<boolean> {
    return inTransaction(this.#db, async (trx) => {
      const [v] = await rows<{ name: string }>(trx, sql`select name from vaults where id = ${input.vaultId} for update`)
      if (!v) return false
      await sql`delete from vaults where id = ${input.vaultId}`.execute(trx)
      await sql`insert into audit_log (at, person_id, action, vault_id, vault_name) values (${input.at.getTime()}, ${input.by}, 'vault_deleted', ${input.vaultId}, ${v.name})`.execute(
        trx,
      )
      return true
    })
  }

  listAudit(filter: { limit: number }): Promise<AuditRow[]> {
    return read(async () =>
      (
        await rows<{ id: string; at: string; person_id: string | null; action: 'vault_deleted'; vault_id: string; vault_name: string }>(
          this.#db,
          sql`select id, at, person_id, action, vault_id, vault_name from audit_log order by id desc limit ${Math.max(0, Math.trunc(filter.limit))}`,
        )
      ).map((r) => ({ id: Number(r.id), at: new Date(ms(r.at)), personId: r.person_id, action: r.action, vaultId: r.vault_id, vaultName: r.vault_name })),
    )
  }

  setEnvironmentRules(input: { vaultId: string; name: string; ownersOnly?: boolean; secondPerson?: boolean }, log: AccessLogEntry): Promise<boolean> {
    return inTransaction(this.#db, async (trx) => {
      await sql`select 1 from vaults where id = ${input.vaultId} for update`.execute(trx)
      const r = await sql`update environments set owners_only = coalesce(${input.ownersOnly ?? null}::boolean, owners_only),
          second_person = coalesce(${input.secondPerson ?? null}::boolean, second_person)
        where vault_id = ${input.vaultId} and name = ${input.name}`.execute(trx)
      if (Number(r.numAffectedRows ?? 0) === 0) return false
      await insertLog(trx, log)
      return true
    })
  }
}

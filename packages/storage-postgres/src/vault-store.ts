import type { AccessLogEntry, AccessLogRow, ImportStore, SealedVariable, VariableMeta, VaultStore } from '@envkeep/env-api-plugin'
import type { KeyMethods, VaultMethods } from '@envkeep/storage-sql'
import { sql, type Kysely } from 'kysely'
import { inTransaction, read } from './database.js'
import { copy, insertLog, ms, rows, toLogRow, type LogRow } from './rows.js'

export { insertLog, rows } from './rows.js'

type Q = Kysely<unknown>

/** What PostgreSQL still writes itself (the rest is the SQL core's). */
type OwnMethods = Omit<VaultStore, keyof VaultMethods | keyof KeyMethods>

/**
 * Variables and the access log on PostgreSQL (vaults, members, environments and
 * keys are the SQL core's: @envkeep/storage-sql).
 */
export class PostgresVaultStore implements Pick<VaultStore, Exclude<keyof OwnMethods, keyof ImportStore>> {
  readonly #db: Q

  constructor(db: Q) {
    this.#db = db
  }

  // ---- variables --------------------------------------------------------------

  readVariables(
    vaultId: string,
    environment: string,
    log: AccessLogEntry,
    names?: readonly string[],
  ): Promise<{ variables: SealedVariable[]; version: number }> {
    // the API's hot path: one statement (atomic on its own) reads the values, the version and
    // writes the read's log entry with the names actually read: one round trip
    const filter = names === undefined ? sql`` : sql`and name = any(${[...new Set(names)]}::text[])`
    return read(async () => {
      const [r] = await rows<{ version: string | null; names: string[]; sealed: Buffer[]; logged: string }>(
        this.#db,
        sql`with v as (
            select name, sealed from variables where vault_id = ${vaultId} and environment = ${environment} ${filter}
          ), l as (
            insert into access_log (vault_id, at, person_id, sign_in_id, client_id, action, environment, names, address, subject, detail)
            select ${log.vaultId}, ${log.at.getTime()}, ${log.personId}, ${log.signInId}, ${log.clientId}, ${log.action}, ${log.environment},
              coalesce((select jsonb_agg(name order by name collate "C") from v), '[]'::jsonb), ${log.address}, ${log.subject ?? null}, ${log.detail ?? null}
            returning 1
          )
          select (select version from environments where vault_id = ${vaultId} and name = ${environment}) as version,
            coalesce((select array_agg(name order by name collate "C") from v), '{}') as names,
            coalesce((select array_agg(sealed order by name collate "C") from v), '{}') as sealed,
            (select count(*) from l) as logged`,
      )
      const variables = r!.names.map((name, i) => ({ name, sealed: copy(r!.sealed[i]!) }))
      return { variables, version: r!.version === null ? 0 : Number(r!.version) }
    })
  }

  listVariableNames(vaultId: string, environment: string): Promise<VariableMeta[]> {
    return read(async () =>
      (
        await rows<{ name: string; updated_at: string; updated_by: string | null }>(
          this.#db,
          sql`select name, updated_at, updated_by from variables where vault_id = ${vaultId} and environment = ${environment} order by name collate "C"`,
        )
      ).map((v) => ({ name: v.name, updatedAt: new Date(ms(v.updated_at)), updatedBy: v.updated_by })),
    )
  }

  // ---- access log -------------------------------------------------------------

  appendAccessLog(entry: AccessLogEntry): Promise<void> {
    return inTransaction(this.#db, (trx) => insertLog(trx, entry))
  }

  listAccessLog(vaultId: string, filter: { environment?: string; action?: AccessLogEntry['action']; limit: number; before?: number }): Promise<AccessLogRow[]> {
    return read(async () => {
      const limit = Math.max(0, Math.trunc(filter.limit))
      const list = await rows<LogRow>(
        this.#db,
        sql`select * from access_log where vault_id = ${vaultId}
          ${filter.environment !== undefined ? sql`and environment = ${filter.environment}` : sql``}
          ${filter.action !== undefined ? sql`and action = ${filter.action}` : sql``}
          ${filter.before !== undefined ? sql`and id < ${filter.before}` : sql``}
          order by id desc limit ${limit}`,
      )
      return list.map(toLogRow)
    })
  }
}

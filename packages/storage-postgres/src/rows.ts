import type { AccessLogRow, Role, VaultRecord } from '@envkeep/env-api-plugin'
import { sql, type Kysely, type RawBuilder } from 'kysely'

/** The rows and conversions the PostgreSQL stores share. */

type Q = Kysely<unknown>

/** Rows of a statement. */
export async function rows<T>(db: Q, q: RawBuilder<unknown>): Promise<T[]> {
  return (await q.execute(db)).rows as T[]
}

export const ms = (v: unknown): number => Number(v)
export const bytes = (u: Uint8Array): Buffer => (Buffer.isBuffer(u) ? u : Buffer.from(u.buffer, u.byteOffset, u.byteLength))
export const copy = (b: Uint8Array): Uint8Array => new Uint8Array(b)
export const json = (v: unknown) => sql`${JSON.stringify(v)}::jsonb`

export interface VaultRow {
  id: string
  name: string
  plan: string
  require_second_person: boolean
  created_at: string
  role?: Role
}

export function record(v: VaultRow): VaultRecord {
  return { id: v.id, name: v.name, plan: v.plan, requireSecondPerson: v.require_second_person, createdAt: new Date(ms(v.created_at)) }
}

/** Appends a log entry in the transaction `db`. */
export async function insertLog(db: Q, e: Omit<AccessLogRow, 'id'>): Promise<void> {
  await sql`insert into access_log (vault_id, at, person_id, sign_in_id, client_id, action, environment, names, address, subject, detail)
    values (${e.vaultId}, ${e.at.getTime()}, ${e.personId}, ${e.signInId}, ${e.clientId}, ${e.action}, ${e.environment}, ${json(e.names)}, ${e.address}, ${e.subject ?? null}, ${e.detail ?? null})`.execute(
    db,
  )
}

/** Locks a vault's row for the transaction (every change of a vault starts here); null when there is no such vault. */
export async function lockVault(trx: Q, vaultId: string): Promise<{ wrapped_key: Buffer | null } | null> {
  const r = await rows<{ wrapped_key: Buffer | null }>(trx, sql`select wrapped_key from vaults where id = ${vaultId} for update`)
  return r[0] ?? null
}

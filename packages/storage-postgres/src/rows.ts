import type { AccessLogRow, ImportRecord, RefusedLine } from '@envkeep/env-api-plugin'
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

export interface ImportRow {
  id: string
  vault_id: string
  environment: string
  sender_id: string
  sign_in_id: string | null
  status: ImportRecord['status']
  names: string[]
  overwrites: string[]
  deletes: string[]
  refused: RefusedLine[]
  created_at: string
  expires_at: string
  decided_at: string | null
  decided_by: string | null
  reason: string | null
}

export function toImport(r: ImportRow): ImportRecord {
  return {
    id: r.id,
    vaultId: r.vault_id,
    environment: r.environment,
    senderId: r.sender_id,
    signInId: r.sign_in_id,
    status: r.status,
    names: r.names,
    overwrites: r.overwrites,
    deletes: r.deletes,
    refused: r.refused,
    createdAt: new Date(ms(r.created_at)),
    expiresAt: new Date(ms(r.expires_at)),
    decidedAt: r.decided_at === null ? null : new Date(ms(r.decided_at)),
    decidedBy: r.decided_by,
    reason: r.reason ?? null,
  }
}

/** A vault's usage (StorageLimit): its variables plus the staged values of its pending pushes. */
export async function usageOf(trx: Q, vaultId: string): Promise<{ n: number; bytes: number }> {
  const [r] = await rows<{ n: string; bytes: string }>(
    trx,
    sql`select (select count(*) from variables where vault_id = ${vaultId}) + (select count(*) from import_values v join imports i on i.id = v.import_id where i.vault_id = ${vaultId} and i.status = 'pending') as n,
      coalesce((select sum(length(sealed)) from variables where vault_id = ${vaultId}), 0) + coalesce((select sum(length(v.sealed)) from import_values v join imports i on i.id = v.import_id where i.vault_id = ${vaultId} and i.status = 'pending'), 0) as bytes`,
  )
  return { n: Number(r?.n ?? 0), bytes: Number(r?.bytes ?? 0) }
}

/** Appends a log entry in the transaction `db`. */
export async function insertLog(db: Q, e: Omit<AccessLogRow, 'id'>): Promise<void> {
  await sql`insert into access_log (vault_id, at, person_id, sign_in_id, client_id, action, environment, names, address, subject, detail)
    values (${e.vaultId}, ${e.at.getTime()}, ${e.personId}, ${e.signInId}, ${e.clientId}, ${e.action}, ${e.environment}, ${json(e.names)}, ${e.address}, ${e.subject ?? null}, ${e.detail ?? null})`.execute(
    db,
  )
}

export interface LogRow {
  id: string
  vault_id: string
  at: string
  person_id: string | null
  sign_in_id: string | null
  client_id: string | null
  action: AccessLogRow['action']
  environment: string | null
  names: string[]
  address: string | null
  subject: string | null
  detail: string | null
}

export function toLogRow(r: LogRow): AccessLogRow {
  return {
    id: Number(r.id),
    vaultId: r.vault_id,
    at: new Date(ms(r.at)),
    personId: r.person_id,
    signInId: r.sign_in_id,
    clientId: r.client_id,
    action: r.action,
    environment: r.environment,
    names: r.names,
    address: r.address,
    subject: r.subject,
    detail: r.detail,
  }
}

/** Locks a vault's row for the transaction (every change of a vault starts here); null when there is no such vault. */
export async function lockVault(trx: Q, vaultId: string): Promise<{ wrapped_key: Buffer | null } | null> {
  const r = await rows<{ wrapped_key: Buffer | null }>(trx, sql`select wrapped_key from vaults where id = ${vaultId} for update`)
  return r[0] ?? null
}

/** A change of an environment's variables moves its version. */
export async function bumpVersion(trx: Q, vaultId: string, environment: string): Promise<void> {
  await sql`update environments set version = version + 1 where vault_id = ${vaultId} and name = ${environment}`.execute(trx)
}

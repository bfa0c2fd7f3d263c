import { sql, type Kysely } from 'kysely'

/**
 * The audit stream's lines: every access-log entry (per vault) and every server-level audit
 * event, as JSON objects. Names, never values (the tables hold none). Read with plain SQL that
 * both SQLite and PostgreSQL answer (same tables and columns), so the stream and
 * `admin audit export` need nothing new from the storage adapters.
 */
export interface AuditLine {
  readonly type: 'access' | 'server'
  readonly id: number
  readonly time: string
  readonly [field: string]: unknown
}

const num = (v: unknown): number => (typeof v === 'number' ? v : Number(v))
const names = (v: unknown): string[] => {
  if (Array.isArray(v)) return v as string[]
  if (typeof v === 'string') {
    try {
      const p = JSON.parse(v) as unknown
      return Array.isArray(p) ? (p as string[]) : []
    } catch {
      return []
    }
  }
  return []
}

function accessLine(r: Record<string, unknown>): AuditLine {
  return {
    type: 'access',
    id: num(r.id),
    time: new Date(num(r.at)).toISOString(),
    vault: r.vault_id,
    action: r.action,
    person: r.person_id ?? null,
    sign_in: r.sign_in_id ?? null,
    client: r.client_id ?? null,
    environment: r.environment ?? null,
    names: names(r.names),
    address: r.address ?? null,
    subject: r.subject ?? null,
    detail: r.detail ?? null,
  }
}

function serverLine(r: Record<string, unknown>): AuditLine {
  return {
    type: 'server',
    id: num(r.id),
    time: new Date(num(r.at)).toISOString(),
    action: r.action,
    person: r.person_id ?? null,
    vault: r.vault_id ?? null,
    vault_name: r.vault_name ?? null,
  }
}

const ACCESS = sql`select id, vault_id, at, person_id, sign_in_id, client_id, action, environment, names, address, subject, detail from access_log`
const SERVER = sql`select id, at, person_id, action, vault_id, vault_name from audit_log`

/** Access-log entries with an id above `after`, oldest first. */
export async function accessAfter(db: Kysely<unknown>, after: number, limit: number): Promise<AuditLine[]> {
  const r = await sql`${ACCESS} where id > ${after} order by id limit ${limit}`.execute(db)
  return (r.rows as Record<string, unknown>[]).map(accessLine)
}

/** Server-level audit events with an id above `after`, oldest first. */
export async function serverAfter(db: Kysely<unknown>, after: number, limit: number): Promise<AuditLine[]> {
  const r = await sql`${SERVER} where id > ${after} order by id limit ${limit}`.execute(db)
  return (r.rows as Record<string, unknown>[]).map(serverLine)
}

/**
 * One sequence of both kinds: each kind stays in id order (its cursor's order), and the two are
 * merged by time (on a tie, access entries first).
 */
export function mergeLines(access: readonly AuditLine[], server: readonly AuditLine[]): AuditLine[] {
  const out: AuditLine[] = []
  let i = 0
  let j = 0
  while (i < access.length || j < server.length) {
    const a = access[i]
    const v = server[j]
    if (v === undefined || (a !== undefined && a.time <= v.time)) {
      out.push(a!)
      i++
    } else {
      out.push(v)
      j++
    }
  }
  return out
}

/** Both kinds within [since, until), optionally of one vault, in time order (ties: server events after access entries, then id). */
export async function auditBetween(db: Kysely<unknown>, since: Date, until: Date, vaultId: string | null): Promise<AuditLine[]> {
  const s = since.getTime()
  const u = until.getTime()
  const vault = vaultId === null ? sql`` : sql` and vault_id = ${vaultId}`
  const a = (await sql`${ACCESS} where at >= ${s} and at < ${u}${vault} order by id`.execute(db)).rows as Record<string, unknown>[]
  const v = (await sql`${SERVER} where at >= ${s} and at < ${u}${vault} order by id`.execute(db)).rows as Record<string, unknown>[]
  return mergeLines(a.map(accessLine), v.map(serverLine))
}

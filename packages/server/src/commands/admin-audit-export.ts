import { sql } from 'kysely'
import { auditBetween } from '../ops/audit-lines.js'
import { databaseOf } from '../ops/health.js'
import { CommandFailure, EXIT_OK, openData, requireString, UsageFailure, type CommandContext } from './context.js'

const UNITS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000 }

/** A moment: an RFC 3339 date or time, or a span back from now (`30m`, `24h`, `7d`). */
export function parseMoment(raw: string, now: Date, flag: string): Date {
  const rel = /^(\d{1,6})([mhd])$/.exec(raw.trim())
  if (rel) return new Date(now.getTime() - Number(rel[1]) * UNITS[rel[2]!]!)
  if (/^\d{4}-\d{2}-\d{2}([T ][0-9:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(raw.trim())) {
    const d = new Date(raw.trim())
    if (!Number.isNaN(d.getTime())) return d
  }
  throw new UsageFailure(`--${flag} must be a date or time (2026-11-01, 2026-11-01T12:00:00Z) or a span back from now (30m, 24h, 7d)`)
}

/**
 * `admin audit export --since S [--until U] [--vault V]`: the audit stream's lines for a
 * period, as JSON Lines on stdout (names, never values), oldest first.
 */
export async function adminAuditExport(ctx: CommandContext): Promise<number> {
  const now = ctx.now()
  const since = parseMoment(requireString(ctx, 'since'), now, 'since')
  const until = typeof ctx.flags.until === 'string' ? parseMoment(ctx.flags.until, now, 'until') : new Date(now.getTime() + 1)
  if (until.getTime() <= since.getTime()) throw new UsageFailure('--until must be after --since')
  const data = await openData(ctx.config)
  try {
    const database = databaseOf(data.storage)
    if (!database) throw new CommandFailure('this storage cannot be exported')
    let vaultId: string | null = null
    if (typeof ctx.flags.vault === 'string') {
      const v = ctx.flags.vault.trim()
      const rows = (await sql`select id from vaults where id = ${v} or lower(name) = lower(${v})`.execute(database.db)).rows as { id: string }[]
      if (rows.length > 1) throw new CommandFailure('several vaults have that name; give the vault id')
      // a deleted vault's id still finds its server audit events
      if (rows.length === 0 && !/^[0-9a-f-]{36}$/i.test(v)) throw new CommandFailure('no vault with that name or id')
      vaultId = rows[0]?.id ?? v
    }
    const lines = await auditBetween(database.db, since, until, vaultId)
    for (const l of lines) ctx.deps.stdout.write(`${JSON.stringify(l)}\n`)
    ctx.deps.stderr.write(`${lines.length} entries from ${since.toISOString()} to ${until.toISOString()}\n`)
    return EXIT_OK
  } finally {
    await data.close()
  }
}

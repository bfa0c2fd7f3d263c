import { existsSync } from 'node:fs'
import { createPostgresStorage, inTransaction } from '@envkeep/storage-postgres'
import { createSqliteStorage } from '@envkeep/storage-sqlite'
import { sql, type Kysely } from 'kysely'
import { createPostgresAccountStore } from '../accounts/postgres-account-store.js'
import { createSqliteAccountStore } from '../accounts/sqlite-account-store.js'
import { CommandFailure, report, requireString, UsageFailure, type CommandContext } from './context.js'

/** Every table, parents before children. Sealed values and wrapped keys are copied as they are. */
const TABLES = [
  'vaults',
  'members',
  'environments',
  'variables',
  'override_environments',
  'overrides',
  'imports',
  'import_values',
  'access_log',
  'oauth_codes',
  'sign_ins',
  'access_tokens',
  'refresh_tokens',
  'ci_identities',
  'used_subject_tokens',
  'accounts',
  'web_sessions',
  'setup_tokens',
] as const

const BATCH = 500

interface PgColumn {
  column_name: string
  data_type: string
}

function convert(value: unknown, type: string, column: string): unknown {
  if (value === null || value === undefined) return null
  // SQLite keeps OAuth scopes as one space-separated string; PostgreSQL as a JSON array
  if (column === 'scopes' && type === 'jsonb' && typeof value === 'string' && !value.startsWith('[')) return JSON.stringify(value.split(' ').filter(Boolean))
  if (type === 'boolean') return value === 1 || value === true
  if (type === 'bigint' || type === 'integer') return typeof value === 'bigint' ? value.toString() : value
  if (type === 'bytea') return Buffer.isBuffer(value) ? value : Buffer.from(value as Uint8Array)
  return value // text, and jsonb from its JSON text
}

/**
 * `migrate --to postgres://…`: copies the SQLite data directory's database into an empty
 * PostgreSQL database, in one transaction (a failure leaves the target as empty as it was,
 * so the command can simply be run again), then counts every table on both sides.
 */
export async function migrateCommand(ctx: CommandContext): Promise<number> {
  const to = requireString(ctx, 'to')
  if (!/^postgres(ql)?:\/\//.test(to)) throw new UsageFailure('--to must be a postgres:// URL (the target database)')
  if (!existsSync(ctx.config.databaseFile))
    throw new CommandFailure(`no envkeep database in ${ctx.config.dataDir} to copy; give the data directory with --data-dir`)
  const source = await createSqliteStorage({ filename: ctx.config.databaseFile, busyTimeoutMs: 10_000 })
  try {
    await createSqliteAccountStore(source.database) // brings the source's own tables up to date
    const target = await createPostgresStorage({ connectionString: to, pool: 2 }).catch((err: unknown) => {
      throw new CommandFailure(`cannot open the target database: ${(err as Error).message}`, { cause: err })
    })
    try {
      await createPostgresAccountStore(target.database)
      const db = target.database.db
      const held = await heldData(db)
      if (held.length > 0) {
        throw new CommandFailure(`the target database already holds envkeep data (${held.join(', ')}); migrate copies into an empty database only`)
      }
      const sqlite = source.database.sqlite
      const counts: Record<string, number> = {}
      await inTransaction(db, async (trx) => {
        for (const table of TABLES) {
          const pgColumns = (
            await sql`select column_name, data_type from information_schema.columns where table_schema = current_schema() and table_name = ${table}`.execute(
              trx,
            )
          ).rows as PgColumn[]
          const sqliteColumns = new Set((sqlite.prepare(`select name from pragma_table_info(?)`).all(table) as { name: string }[]).map((c) => c.name))
          const columns = pgColumns.filter((c) => sqliteColumns.has(c.column_name))
          if (columns.length === 0) {
            counts[table] = 0
            continue
          }
          const names = columns.map((c) => `"${c.column_name}"`).join(', ')
          const all = sqlite.prepare(`select ${names} from "${table}"`).raw(true).all() as unknown[][]
          for (let i = 0; i < all.length; i += BATCH) {
            const rows = all
              .slice(i, i + BATCH)
              .map((r) => sql`(${sql.join(r.map((v, j) => sql`${convert(v, columns[j]!.data_type, columns[j]!.column_name)}`))})`)
            const overriding = table === 'access_log' ? sql`overriding system value` : sql``
            await sql`insert into ${sql.id(table)} (${sql.join(columns.map((c) => sql.id(c.column_name)))}) ${overriding} values ${sql.join(rows)}`.execute(trx)
          }
          counts[table] = all.length
        }
        await sql`select setval(pg_get_serial_sequence('access_log', 'id'), coalesce((select max(id) from access_log), 0) + 1, false)`.execute(trx)
      })
      // check: every table holds as many rows as the source
      for (const table of TABLES) {
        const n = Number(((await sql`select count(*) as n from ${sql.id(table)}`.execute(db)).rows[0] as { n: string }).n)
        if (n !== counts[table])
          throw new CommandFailure(
            `the copy of ${table} holds ${n} rows, the source ${counts[table]}; the target is not consistent, empty it and run migrate again`,
          )
      }
      const summary = TABLES.filter((t) => counts[t]! > 0)
        .map((t) => `${t} ${counts[t]}`)
        .join(', ')
      return report(
        ctx,
        `copied and checked: ${summary || 'nothing (the source is empty)'}\nNow start every server with ENVKEEP_DATABASE_URL set to the target (and the same master key).`,
        { tables: counts },
      )
    } finally {
      await target.close()
    }
  } finally {
    await source.close()
  }
}

async function heldData(db: Kysely<unknown>): Promise<string[]> {
  const out: string[] = []
  for (const table of ['vaults', 'accounts', 'sign_ins', 'oauth_codes'] as const) {
    const n = Number(((await sql`select count(*) as n from ${sql.id(table)}`.execute(db)).rows[0] as { n: string }).n)
    if (n > 0) out.push(`${n} ${table.replace('_', ' ')}`)
  }
  return out
}

import { existsSync } from 'node:fs'
import { createPostgresStorage } from '@envkeep/storage-postgres'
import { createSqliteStorage } from '@envkeep/storage-sqlite'
import { sql } from 'kysely'
import { createPostgresAccountStore } from '../accounts/postgres-account-store.js'
import { createSqliteAccountStore } from '../accounts/sqlite-account-store.js'
import { ensureAuditStreamTable } from '../ops/audit-stream.js'
import { dumpDatabase, heldRows, loadDatabase, type Target } from '../ops/backup-db.js'
import { CommandFailure, report, requireString, UsageFailure, type CommandContext } from './context.js'

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
    await ensureAuditStreamTable(source.database.db as never, 'sqlite')
    const target = await createPostgresStorage({ connectionString: to, pool: 2 }).catch((err: unknown) => {
      throw new CommandFailure(`cannot open the target database: ${(err as Error).message}`, { cause: err })
    })
    try {
      await createPostgresAccountStore(target.database)
      await ensureAuditStreamTable(target.database.db, 'postgres')
      const db = target.database.db
      const into: Target = { kind: 'postgres', db }
      const held = await heldRows(into)
      if (held.length > 0) {
        throw new CommandFailure(`the target database already holds envkeep data (${held.join(', ')}); migrate copies into an empty database only`)
      }
      // read every table as a backup does, write them as a restore does: one walker knows the tables
      const read: Record<string, number> = {}
      const { counts, dropped } = await loadDatabase(into, async (loader) => {
        let current = ''
        await dumpDatabase(
          { kind: 'sqlite', sqlite: source.database.sqlite },
          {
            table(name, columns) {
              current = name
              read[name] = 0
              return loader.table(name, columns)
            },
            row(values) {
              read[current]!++
              return loader.row(values)
            },
          },
        )
      }).catch((err: unknown) => {
        throw new CommandFailure(`the copy failed and wrote nothing: ${(err as Error).message}`, { cause: err })
      })
      // check: every table of the source holds as many rows in the target
      for (const [table, n0] of Object.entries(read)) {
        const n = Number(((await sql`select count(*) as n from ${sql.id(table)}`.execute(db)).rows[0] as { n: string }).n)
        if (n !== n0)
          throw new CommandFailure(`the copy of ${table} holds ${n} rows, the source ${n0}; the target is not consistent, empty it and run migrate again`)
      }
      const leftOut = dropped.filter((c) => counts[c.slice(0, c.indexOf('.'))]! > 0) // a column of an empty table loses nothing
      const summary = Object.keys(counts)
        .filter((t) => counts[t]! > 0)
        .map((t) => `${t} ${counts[t]}`)
        .join(', ')
      return report(
        ctx,
        `copied and checked: ${summary || 'nothing (the source is empty)'}\n${leftOut.length > 0 ? `left out (the target's schema has no such column): ${leftOut.join(', ')}\n` : ''}Now start every server with ENVKEEP_DATABASE_URL set to the target (and the same master key).`,
        { tables: counts, dropped: leftOut },
      )
    } finally {
      await target.close()
    }
  } finally {
    await source.close()
  }
}

import Database from 'better-sqlite3'
import { Kysely, SqliteDialect } from 'kysely'
import { Migrator } from 'kysely/migration'
import { migrations } from './migrations/index.js'
import type { DB } from '@envkeep/storage-sql'
import { type CommitSync, openCommitSync } from './commit-sync.js'

export interface OpenOptions {
  /** Path of the database file, or `:memory:` for tests. */
  readonly filename: string
  /** Milliseconds to wait for a lock before failing with 55P03. Default 5000. */
  readonly busyTimeoutMs?: number
  /**
   * `full` (default): every commit is on disk before it returns (kysely's, e.g. the server's
   * accounts) or before its promise settles (the SQL core's runner, whose commits are synced
   * off the event loop: `commits`), so a read's access-log entry survives a power cut before
   * its values leave (group commit shares that sync among the reads committed meanwhile).
   * `normal` survives a crash of the process but may lose the last commits on a power cut.
   */
  readonly durability?: 'full' | 'normal'
  /**
   * SQLite's page cache, in KiB (`PRAGMA cache_size = -N`). Default 2048: SQLite's own default
   * size; better-sqlite3 builds SQLite with 16 MiB, which a busy server fills and keeps (the
   * access log alone outgrows it), ~14 MiB of RSS for pages the OS caches anyway.
   */
  readonly cacheSizeKiB?: number
}

export interface OpenDatabase {
  readonly sqlite: Database.Database
  readonly db: Kysely<DB>
  /**
   * With `durability: 'full'` on a file: the sync of the runner's commits off the event loop
   * (commit-sync.ts); every kysely statement still runs at `synchronous = FULL` (syncForRunner).
   */
  readonly commits: CommitSync | undefined
  /**
   * With `commits`: puts the connection at `synchronous = NORMAL` for the runner's commits, whose
   * sync is `commits`' own. Kysely's next statement (the server's accounts, the migrations) puts
   * it back at FULL first, so each level is set only when the connection changes hands.
   */
  readonly syncForRunner: () => void
  close(): Promise<void>
}

/**
 * Opens (creating if needed) the database: WAL, synchronous FULL (see
 * `durability`), foreign keys on, busy timeout, a 2 MiB page cache, then runs the versioned migrations. A failed migration fails the open.
 */
export async function openDatabase(options: OpenOptions): Promise<OpenDatabase> {
  const sqlite = new Database(options.filename)
  sqlite.pragma(`busy_timeout = ${Math.trunc(options.busyTimeoutMs ?? 5000)}`)
  if (options.filename !== ':memory:') sqlite.pragma('journal_mode = WAL')
  sqlite.pragma(`synchronous = ${options.durability === 'normal' ? 'NORMAL' : 'FULL'}`)
  sqlite.pragma('foreign_keys = ON')
  sqlite.pragma(`cache_size = -${Math.max(64, Math.trunc(options.cacheSizeKiB ?? 2048))}`)
  // false while the runner's NORMAL is set (syncForRunner); kysely's statements reset it first
  let full = true
  const toFull = (): void => {
    if (full) return
    sqlite.pragma('synchronous = FULL')
    full = true
  }
  const forKysely = {
    close: () => sqlite.close(),
    prepare(text: string) {
      toFull()
      return sqlite.prepare(text)
    },
  }
  const db = new Kysely<DB>({ dialect: new SqliteDialect({ database: forKysely }) })
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } })
  const { error } = await migrator.migrateToLatest()
  if (error) {
    await db.destroy()
    throw new Error('envkeep: database migration failed', { cause: error })
  }
  const commits = options.durability !== 'normal' && options.filename !== ':memory:' ? openCommitSync(walPath(sqlite)) : undefined
  let closed = false
  return {
    sqlite,
    db,
    commits,
    syncForRunner() {
      if (!commits || !full) return
      sqlite.pragma('synchronous = NORMAL')
      full = false
    },
    async close() {
      if (closed) return
      closed = true
      await db.destroy() // closes the better-sqlite3 handle too
      await commits?.close()
    },
  }
}

/**
 * The WAL file SQLite writes: beside the database file as SQLite resolved it (`database_list`
 * gives the full path, symbolic links followed), which the migrations' first transaction created.
 */
function walPath(sqlite: Database.Database): string {
  const [main] = sqlite.pragma('database_list') as { file: string }[]
  return `${main?.file ?? sqlite.name}-wal`
}

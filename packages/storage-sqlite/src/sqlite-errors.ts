import { StorageError } from '@envkeep/env-api-plugin'
import type { Kysely } from 'kysely'
import type { OpenDatabase } from './database.js'
import type { DB } from '@envkeep/storage-sql'

/**
 * SQLite result codes (better-sqlite3 reports extended codes, e.g.
 * `SQLITE_CONSTRAINT_UNIQUE`, `SQLITE_IOERR_WRITE`) mapped to the spec's
 * SQLSTATE vocabulary. First matching prefix wins, so the specific
 * constraint codes come before the generic `SQLITE_CONSTRAINT`.
 *
 * Where the spec's table has no row, the nearest PostgreSQL code is used:
 * `SQLITE_FULL` (disk or database full) is 53100 `disk_full`,
 * `SQLITE_NOMEM` 53200 `out_of_memory`, `SQLITE_READONLY` 25006
 * `read_only_sql_transaction`, `SQLITE_TOOBIG` 54000
 * `program_limit_exceeded`, `SQLITE_CORRUPT`/`SQLITE_NOTADB` XX001
 * `data_corrupted`; anything else is XX000 `internal_error`.
 */
const CODE_TO_SQLSTATE: readonly (readonly [prefix: string, sqlstate: string])[] = [
  ['SQLITE_CONSTRAINT_UNIQUE', '23505'],
  ['SQLITE_CONSTRAINT_PRIMARYKEY', '23505'],
  ['SQLITE_CONSTRAINT_ROWID', '23505'],
  ['SQLITE_CONSTRAINT_FOREIGNKEY', '23503'],
  ['SQLITE_CONSTRAINT_CHECK', '23514'],
  ['SQLITE_CONSTRAINT_NOTNULL', '23514'],
  ['SQLITE_CONSTRAINT', '23514'],
  ['SQLITE_BUSY', '55P03'],
  ['SQLITE_LOCKED', '55P03'],
  ['SQLITE_INTERRUPT', '57014'],
  ['SQLITE_CANTOPEN', '08006'],
  ['SQLITE_IOERR', '08006'],
  ['SQLITE_FULL', '53100'],
  ['SQLITE_NOMEM', '53200'],
  ['SQLITE_READONLY', '25006'],
  ['SQLITE_TOOBIG', '54000'],
  ['SQLITE_CORRUPT', 'XX001'],
  ['SQLITE_NOTADB', 'XX001'],
  ['SQLITE_PERM', '42501'],
  ['SQLITE_AUTH', '42501'],
]

/** better-sqlite3's TypeError once `close()` was called. */
const CLOSED_MESSAGE = 'The database connection is not open'
/** kysely's Error once `destroy()` was called (OpenDatabase.close does that). */
const DESTROYED_MESSAGE = 'driver has already been destroyed'

/**
 * What a constraint message names: `UNIQUE constraint failed: variables.vault_id,
 * variables.environment, variables.name` → `variables.vault_id, …`;
 * `CHECK constraint failed: members_role` → `members_role`. Only identifiers
 * are kept; anything else (an expression, a trigger's text) is dropped.
 */
const CONSTRAINT_RE = /constraint failed: ([A-Za-z_][\w.]*(?:, [A-Za-z_][\w.]*)*)$/

/** The SQLSTATE for a better-sqlite3 error code. */
export function sqlstateFor(code: string): string {
  for (const [prefix, state] of CODE_TO_SQLSTATE) if (code.startsWith(prefix)) return state
  return 'XX000'
}

function sqliteCode(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null) return undefined
  const { name, code } = err as { name?: unknown; code?: unknown }
  return name === 'SqliteError' && typeof code === 'string' ? code : undefined
}

/**
 * Converts a database failure into a `StorageError`; anything else (a bug)
 * is returned unchanged. `detail` names the constraint when SQLite names it,
 * else `table` (the table or operation the caller was working on); never a
 * value of a row. The original error is kept as `cause` for the log.
 */
export function toStorageError(err: unknown, table?: string): unknown {
  if (err instanceof StorageError) return err
  const code = sqliteCode(err)
  if (code !== undefined) {
    const message = (err as Error).message
    const named = code.startsWith('SQLITE_CONSTRAINT') ? CONSTRAINT_RE.exec(message)?.[1] : undefined
    return new StorageError(sqlstateFor(code), named ?? table, { cause: err })
  }
  if (err instanceof Error && (err.message === CLOSED_MESSAGE || err.message === DESTROYED_MESSAGE)) {
    return new StorageError('08006', table ?? 'connection closed', { cause: err })
  }
  return err
}

/** Runs `fn`, throwing database failures as `StorageError` (see toStorageError). */
export async function wrapStorage<T>(fn: () => T | Promise<T>, table?: string): Promise<T> {
  try {
    return await fn()
  } catch (err) {
    throw toStorageError(err, table)
  }
}

interface Holder {
  tail: Promise<void>
  waiting: number
}

const holders = new WeakMap<OpenDatabase, Holder>()

/**
 * Runs `fn` holding the connection across awaits (kysely's connection, so
 * no other kysely query interleaves), one holder at a time, in call order.
 * The holders queue here first so that who waits can be counted
 * (`connectionWaiters`): the contract probe's signal that a race is on.
 */
export async function holdConnection<T>(d: OpenDatabase, fn: (conn: Kysely<DB>) => Promise<T>): Promise<T> {
  let h = holders.get(d)
  if (!h) {
    h = { tail: Promise.resolve(), waiting: 0 }
    holders.set(d, h)
  }
  const previous = h.tail
  let release!: () => void
  h.tail = new Promise<void>((resolve) => (release = resolve))
  h.waiting++
  try {
    await previous
  } finally {
    h.waiting--
  }
  try {
    return await d.db.connection().execute(fn)
  } finally {
    release()
  }
}

/** How many callers of holdConnection wait for another one to let go. */
export function connectionWaiters(d: OpenDatabase): number {
  return holders.get(d)?.waiting ?? 0
}

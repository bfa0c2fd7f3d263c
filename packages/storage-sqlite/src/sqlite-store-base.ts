import type { AccessLogEntry } from '@envkeep/env-api-plugin'
import type { Statement } from 'better-sqlite3'
import type { Compilable } from 'kysely'
import type { OpenDatabase } from './database.js'
import { runSync, type TransactionMode } from './sqlite-errors.js'
import { INSERT_LOG_SQL, logParams } from './vault-store.js'

/** Prepared statements are cached by SQL text; past this many the cache starts over. */
const STATEMENT_CACHE_MAX = 256

/** better-sqlite3 binds Buffers, not plain Uint8Arrays; this view copies nothing. */
export function bytes(u: Uint8Array): Buffer {
  return Buffer.isBuffer(u) ? u : Buffer.from(u.buffer, u.byteOffset, u.byteLength)
}

/**
 * What the SQLite stores share: statements prepared once, kysely queries
 * compiled and run synchronously, one transaction per method through
 * `runSync` (nothing else on the connection interleaves), the log insert.
 */
export abstract class SqliteStoreBase {
  protected readonly d: OpenDatabase
  readonly #statements = new Map<string, Statement>()

  constructor(d: OpenDatabase) {
    this.d = d
  }

  protected stmt(text: string): Statement {
    let s = this.#statements.get(text)
    if (!s) {
      if (this.#statements.size >= STATEMENT_CACHE_MAX) this.#statements.clear()
      s = this.d.sqlite.prepare(text)
      this.#statements.set(text, s)
    }
    return s
  }

  protected all<O>(q: Compilable<O>): O[] {
    const c = q.compile()
    return this.stmt(c.sql).all(...c.parameters) as O[]
  }

  protected first<O>(q: Compilable<O>): O | undefined {
    const c = q.compile()
    return this.stmt(c.sql).get(...c.parameters) as O | undefined
  }

  protected run(q: Compilable<unknown>): number {
    const c = q.compile()
    return this.stmt(c.sql).run(...c.parameters).changes
  }

  protected tx<T>(mode: TransactionMode, table: string, fn: () => T): Promise<T> {
    return runSync(this.d, mode, fn, table)
  }

  protected get db() {
    return this.d.db
  }

  protected log(e: AccessLogEntry): void {
    this.stmt(INSERT_LOG_SQL).run(...logParams(e))
  }
}

import type { CompiledQuery, Compilable } from 'kysely'
import { withPreparedName } from './prepared-name.js'

/**
 * One statement an operation needs run: the compiled query, and whether it
 * wants the rows back or the number of rows it changed.
 */
export interface Step {
  readonly query: CompiledQuery
  readonly want: 'rows' | 'changes'
  /**
   * The operation does not read this statement's answer (`ahead`): a runner
   * that pays a round trip per statement may send it without waiting, with
   * what follows; its failure then fails the operation at its next statement
   * or at its end, always before a commit.
   */
  readonly ahead?: boolean
}

/**
 * An operation of the SQL core: a generator that yields the statements it
 * needs, one at a time, and receives each one's answer (rows, or the number
 * of rows changed). It never touches a connection, so the same code runs
 * synchronously inside a better-sqlite3 transaction and awaited on a
 * PostgreSQL client: the dialect's runner drives it (`drive`, `driveAsync`).
 *
 * Write it with `yield*`: `const rows = yield* all(d.db.selectFrom('vaults')…)`.
 */
export type Op<T> = Generator<Step, T, unknown>

/** Runs a query, answering its rows. */
export function* all<O>(q: Compilable<O>): Generator<Step, O[], unknown> {
  return (yield { query: q.compile(), want: 'rows' }) as O[]
}

/** Runs a query, answering its first row or undefined. */
export function* first<O>(q: Compilable<O>): Generator<Step, O | undefined, unknown> {
  const rows = (yield { query: q.compile(), want: 'rows' }) as O[]
  return rows[0]
}

/** Runs a statement, answering how many rows it changed. */
export function* run(q: Compilable<unknown>): Generator<Step, number, unknown> {
  return (yield { query: q.compile(), want: 'changes' }) as number
}

/**
 * Runs a statement whose answer the operation does not read (a row lock it
 * takes, rows it adds), as a Step marked `ahead`: PostgreSQL sends it with
 * what follows instead of waiting for it. Its failure still fails the
 * operation (at its next statement, or before the commit), so never for a
 * statement whose failure the operation would catch and carry on from.
 */
export function* ahead(q: Compilable<unknown>): Generator<Step, void, unknown> {
  yield { query: q.compile(), want: 'changes', ahead: true }
}

/** The texts `together` made on PostgreSQL, by the texts they join (the same few, over and over), each with its statement's name. */
const joined = new Map<string, { readonly text: string; readonly name: string | undefined }>()
const MOST_JOINED = 256
/** Only the texts of ordinary pushes are kept (a big push's, made again each time, costs little next to its values). */
const MOST_KEPT_TEXT = 16_384
/** PostgreSQL binds at most 65,535 parameters to a statement; past this many, one statement each. */
const MOST_PARAMETERS = 30_000
/**
 * The first texts kept are named (prepared once per connection: PostgreSQL parses and plans a
 * push's statement once instead of at every push); a name is never given to another text, and
 * no more are made past this many (each stays prepared on every connection of the pool).
 */
const MOST_NAMED = 32
let named = 0

/**
 * Runs statements that answer nothing and depend on none of each other's
 * effects (inserts of new rows, counters), in this order: on PostgreSQL as
 * ONE statement (each in a data-modifying WITH of the last: one round trip
 * instead of one per statement; they see the same snapshot, and foreign keys
 * among them are checked at its end), elsewhere one after the other. Their
 * texts renumber `$n` placeholders, so they hold no literal `$` followed by
 * digits (every value is a parameter). Their answers are not read: they go
 * `ahead` (sent with what follows; a failure fails the operation).
 */
export function* together(d: { readonly name: string }, queries: readonly Compilable<unknown>[]): Generator<Step, void, unknown> {
  const compiled = queries.map((q) => q.compile())
  if (d.name !== 'postgres' || compiled.length < 2 || compiled.reduce((n, c) => n + c.parameters.length, 0) > MOST_PARAMETERS) {
    for (const c of compiled) yield { query: c, want: 'changes', ahead: true }
    return
  }
  const key = compiled.map((c) => c.sql).join('\u0000')
  let made = joined.get(key)
  if (made === undefined) {
    let offset = 0
    const parts = compiled.map((c) => {
      const shift = offset
      offset += c.parameters.length
      return shift === 0 ? c.sql : c.sql.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + shift}`)
    })
    const last = parts.pop() as string
    const text = `with ${parts.map((p, i) => `s${i} as (${p})`).join(', ')} ${last}`
    const kept = key.length <= MOST_KEPT_TEXT
    made = { text, name: kept && named < MOST_NAMED ? `envkeep_together_${++named}` : undefined }
    if (kept) {
      if (joined.size >= MOST_JOINED) joined.clear()
      joined.set(key, made)
    }
  }
  // a new text: nothing else of the parts comes along (a part's prepared name would name another text)
  const { query, queryId } = compiled[compiled.length - 1] as CompiledQuery
  const one: CompiledQuery = { query, queryId, sql: made.text, parameters: compiled.flatMap((c) => c.parameters) }
  yield { query: made.name ? withPreparedName(one, made.name) : one, want: 'changes', ahead: true }
}

/**
 * Drives an operation to its end synchronously (SQLite). A failing statement
 * is thrown into the operation (so its `finally` blocks run) and out of here.
 */
export function drive<T>(op: Op<T>, exec: (step: Step) => unknown): T {
  let next = op.next()
  while (!next.done) {
    let answer: unknown
    try {
      answer = exec(next.value)
    } catch (err) {
      next = op.throw(err)
      continue
    }
    next = op.next(answer)
  }
  return next.value
}

/** Drives an operation to its end, awaiting each statement (PostgreSQL). */
export async function driveAsync<T>(op: Op<T>, exec: (step: Step) => Promise<unknown>): Promise<T> {
  let next = op.next()
  while (!next.done) {
    let answer: unknown
    try {
      answer = await exec(next.value)
    } catch (err) {
      next = op.throw(err)
      continue
    }
    next = op.next(answer)
  }
  return next.value
}

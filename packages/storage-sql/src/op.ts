import type { CompiledQuery, Compilable } from 'kysely'

/**
 * One statement an operation needs run: the compiled query, and whether it
 * wants the rows back or the number of rows it changed.
 */
export interface Step {
  readonly query: CompiledQuery
  readonly want: 'rows' | 'changes'
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

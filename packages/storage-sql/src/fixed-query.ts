import type { Compilable, CompiledQuery, RawBuilder } from 'kysely'
import type { SqlDialect } from './dialect.js'
import { withPreparedName } from './prepared-name.js'

const ARG = '\u0000envkeep-arg:'
/**
 * A query of the hot paths (the read of an environment, the access-log
 * insert, one row of a push), compiled once per dialect: compiling a kysely
 * query costs more than running it on SQLite. `build` places argument `i`
 * with `arg(i)`; each call binds the arguments to the same text, so every
 * parameter of the query must come from an argument. `prepare`: a name
 * unique among fixed queries, for the runner to prepare the text under
 * (`preparedName`); only for statements whose answer's columns are named
 * (an insert, or `returning` listed columns): a prepared `select *` would
 * fail once a migration adds a column.
 */
export function fixedQuery<A extends readonly unknown[], O>(
  build: (d: SqlDialect, arg: (i: number) => never) => Compilable<O>,
  prepare?: string,
): (d: SqlDialect, ...args: A) => Compilable<O> {
  const compiled = new WeakMap<SqlDialect, { readonly query: CompiledQuery<O>; readonly slots: readonly number[] }>()
  return (d, ...args) => {
    let c = compiled.get(d)
    if (!c) {
      const query = build(d, (i) => `${ARG}${i}` as never).compile()
      const slots = query.parameters.map((p) => (typeof p === 'string' && p.startsWith(ARG) ? Number(p.slice(ARG.length)) : -1))
      if (slots.includes(-1)) throw new Error('envkeep: every parameter of a fixed query must come from its arguments')
      const named = prepare ? withPreparedName(query, `envkeep_${prepare}`) : query
      c = { query: named, slots }
      compiled.set(d, c)
    }
    const { query, slots } = c
    return { compile: () => ({ ...query, parameters: slots.map((i) => args[i]) }) }
  }
}

/** A raw `sql` statement as a query an operation can yield (compiled with the dialect's compiler). */
export function raw<O>(d: SqlDialect, q: RawBuilder<O>): Compilable<O> {
  return { compile: () => q.compile(d.db) }
}

import type { Compilable, CompiledQuery } from 'kysely'

/**
 * A query compiled once and run after with new parameters, for the
 * per-request paths where compiling costs more than running (SQLite).
 * `build` must give the same statement for any arguments, and take them as
 * its parameters in order; the first compile checks it does.
 */
export function compiledOnce<A extends readonly (string | number)[], O>(build: (...args: A) => Compilable<O>): (...args: A) => Compilable<O> {
  let cached: CompiledQuery<O> | undefined
  return (...args) => ({
    compile(): CompiledQuery<O> {
      if (!cached) {
        const first = build(...args).compile()
        if (first.parameters.length !== args.length || first.parameters.some((p, i) => p !== args[i]))
          throw new Error('envkeep: compiledOnce needs a query whose parameters are its arguments, in order')
        cached = first
        return first
      }
      return { ...cached, parameters: args }
    },
  })
}

import type { CompiledQuery } from 'kysely'

// Its own module (nothing of the package imported): op.ts and fixed-query.ts both name
// statements, and dialect.ts's types lead to op.ts, so it could live in neither without a circle.

const PREPARE = Symbol('envkeep.prepare')

/**
 * The name a fixed query was given to be prepared under (see `fixedQuery`), or undefined: a
 * runner may prepare the text once per connection under it (PostgreSQL: a named statement,
 * parsed once instead of at every run).
 */
export function preparedName(query: CompiledQuery): string | undefined {
  return (query as { [PREPARE]?: string })[PREPARE]
}

/** `query` to be prepared under `name` (`preparedName`): a name no other text is ever given. */
export function withPreparedName<O>(query: CompiledQuery<O>, name: string): CompiledQuery<O> {
  return Object.assign({ ...query }, { [PREPARE]: name })
}

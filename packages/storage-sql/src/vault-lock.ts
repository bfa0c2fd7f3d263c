import type { SqlDialect } from './dialect.js'
import { first } from './op.js'

/**
 * The vault's row locked for the rest of the write (PostgreSQL `for update`; SQLite's write
 * transaction holds the whole database), with its wrapped key; undefined when there is no such
 * vault. A count, a name or the key checked after it cannot be raced by another process
 * changing the same vault: every change of a vault's values, pushes, webhooks and CI
 * identities starts here.
 */
export function* lockVault(d: SqlDialect, vaultId: string) {
  return yield* first(
    d.db
      .selectFrom('vaults')
      .select('wrapped_key')
      .where('id', '=', vaultId)
      .$if(d.rowLocks, (q) => q.forUpdate()),
  )
}

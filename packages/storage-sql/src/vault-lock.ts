import type { SqlDialect } from './dialect.js'
import { first } from './op.js'

/**
 * Whether the vault exists, its row locked for the rest of the write (PostgreSQL `for update`;
 * SQLite's write transaction holds the whole database): a count or a name checked after it
 * cannot be raced by another process adding to the same vault.
 */
export function* lockVault(d: SqlDialect, vaultId: string) {
  const vault = yield* first(
    d.db
      .selectFrom('vaults')
      .select('id')
      .where('id', '=', vaultId)
      .$if(d.rowLocks, (q) => q.forUpdate()),
  )
  return vault !== undefined
}

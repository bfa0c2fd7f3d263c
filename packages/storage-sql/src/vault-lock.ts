import type { SqlDialect } from './dialect.js'
import { fixedQuery } from './fixed-query.js'
import { ahead, first } from './op.js'

const lock = fixedQuery<[string], { wrapped_key: Uint8Array | null }>(
  (d, arg) =>
    d.db
      .selectFrom('vaults')
      .select('wrapped_key')
      .where('id', '=', arg(0))
      .$if(d.rowLocks, (q) => q.forNoKeyUpdate()),
  'lock_vault',
)

/**
 * The vault's row locked for the rest of the write (PostgreSQL `for no key update`; SQLite's write
 * transaction holds the whole database), with its wrapped key; undefined when there is no such
 * vault. A count, a name or the key checked after it cannot be raced by another process
 * changing the same vault: every change of a vault's values, pushes, webhooks and CI
 * identities starts here.
 *
 * `for no key update`, not `for update`: writers still wait for each other (the mode conflicts
 * with itself, and a vault's deletion takes `for update`), but a read's access-log row, whose
 * foreign key takes a key-share lock on the vault's row, does not wait for a write in progress
 * (a 1 MiB push holds the lock for tens of milliseconds). No write changes a vault's id.
 */
export function* lockVault(d: SqlDialect, vaultId: string) {
  return yield* first(lock(d, vaultId))
}

/**
 * The same lock for a write that reads nothing of it (it reads the vault in its next
 * statement, which runs once the lock is held): sent `ahead`, with that statement.
 */
export function* lockVaultAhead(d: SqlDialect, vaultId: string) {
  yield* ahead(lock(d, vaultId))
}

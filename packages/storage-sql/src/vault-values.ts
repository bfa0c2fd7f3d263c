import type { NewChangeSet, SealedVariable } from '@envkeep/env-api-plugin'
import type { SqlDialect } from './dialect.js'
import { fixedQuery } from './fixed-query.js'
import { first, run } from './op.js'
import { bytes, num } from './rows.js'

/**
 * What every change of a vault's values shares (variables, pushes,
 * history), after the vault's row is locked (vault-lock.ts): its key compared (its usage:
 * staged-usage.ts), a variable written, the version moved, a change set inserted.
 * Each runs inside the caller's transaction.
 */

/** True when the values were sealed under a key that is not the vault's (`sealedUnder` given and different). */
export function staleKey(vault: { wrapped_key: Uint8Array | null } | undefined, sealedUnder: Uint8Array | undefined): boolean {
  if (!sealedUnder) return false
  return !vault?.wrapped_key || !Buffer.from(vault.wrapped_key).equals(bytes(sealedUnder))
}

const upsert = fixedQuery<[string, string, string, Buffer, number, string | null], unknown>((d, arg) =>
  d.db
    .insertInto('variables')
    .values({ vault_id: arg(0), environment: arg(1), name: arg(2), sealed: arg(3), updated_at: arg(4), updated_by: arg(5) })
    .onConflict((oc) =>
      oc.columns(['vault_id', 'environment', 'name']).doUpdateSet({
        sealed: (eb) => eb.ref('excluded.sealed'),
        updated_at: (eb) => eb.ref('excluded.updated_at'),
        updated_by: (eb) => eb.ref('excluded.updated_by'),
      }),
    ),
)

/** Writes one variable (added or replaced). */
export function* putVariable(d: SqlDialect, vaultId: string, environment: string, v: SealedVariable, by: string | null, at: number) {
  yield* run(upsert(d, vaultId, environment, v.name, bytes(v.sealed), at, by))
}

/** A change of an environment's variables moves its version. */
export function* bumpVersion(d: SqlDialect, vaultId: string, environment: string) {
  yield* run(
    d.db
      .updateTable('environments')
      .set((eb) => ({ version: eb('version', '+', 1) }))
      .where('vault_id', '=', vaultId)
      .where('name', '=', environment),
  )
}

const insertEntry = fixedQuery<[number, string, string, Buffer | null, Buffer | null], unknown>((d, arg) =>
  d.db.insertInto('change_entries').values({ change_set_seq: arg(0), name: arg(1), kind: arg(2), before: arg(3), after: arg(4) }),
)

/** Inserts a change set and its entries (nothing for one with no entry). */
export function* insertChangeSet(d: SqlDialect, c: NewChangeSet) {
  if (c.entries.length === 0) return
  const r = yield* first(
    d.db
      .insertInto('change_sets')
      .values({ id: c.id, vault_id: c.vaultId, environment: c.environment, at: c.at.getTime(), by: c.by, how: c.how, ref: c.ref })
      .returning('seq'),
  )
  const seq = num(r?.seq)
  for (const e of c.entries) yield* run(insertEntry(d, seq, e.name, e.kind, e.before && bytes(e.before), e.after && bytes(e.after)))
}

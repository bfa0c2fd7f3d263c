import type { ChangeResult, KeySwap, VaultSecrets, VaultStore } from '@envkeep/env-api-plugin'
import { sameSecrets, StorageError } from '@envkeep/env-api-plugin'
import type { SqlDialect, SqlRunner } from './dialect.js'
import { all, first, type Op, run } from './op.js'
import { bytes, copyBytes } from './rows.js'
import { recountStaged } from './staged-usage.js'
import { lockVault } from './vault-lock.js'

/** The data-key half of the contract: read a vault's key and secrets, swap them by compare-and-set. */
export type KeyMethods = Pick<VaultStore, 'getWrappedKey' | 'readVaultSecrets' | 'swapWrappedKey'>

/**
 * A vault's data key (vault-store.ts in the plugin): made once, rewrapped by a
 * master-key rotation, replaced with every sealed value by a data-key
 * rotation. No transaction waits for the keyring: the domain wraps or seals
 * first and swaps after, refused (`changed`) when what it read moved.
 */
export function createKeyStore(s: SqlRunner): KeyMethods {
  const d = s.dialect
  return {
    getWrappedKey: (vaultId) =>
      s.read(function* () {
        const r = yield* first(d.db.selectFrom('vaults').select('wrapped_key').where('id', '=', vaultId))
        return r?.wrapped_key ? copyBytes(r.wrapped_key) : null
      }),
    readVaultSecrets: (vaultId) => s.read(() => readSecrets(d, vaultId)),
    swapWrappedKey: (swap) => s.write(() => swapWrappedKey(d, swap)),
  }
}

/** Every secret of a vault as stored now; null for no vault or no key. */
function* readSecrets(d: SqlDialect, vaultId: string): Op<VaultSecrets | null> {
  const v = yield* first(d.db.selectFrom('vaults').select('wrapped_key').where('id', '=', vaultId))
  if (!v?.wrapped_key) return null
  const variables = yield* all(d.db.selectFrom('variables').select(['environment', 'name', 'sealed']).where('vault_id', '=', vaultId))
  const staged = yield* all(
    d.db
      .selectFrom('import_values as iv')
      .innerJoin('imports as i', 'i.id', 'iv.import_id')
      .select(['iv.import_id', 'i.environment', 'iv.name', 'iv.sealed'])
      .where('i.vault_id', '=', vaultId)
      .where('i.status', '=', 'pending'),
  )
  const kept = yield* all(
    d.db
      .selectFrom('change_entries as e')
      .innerJoin('change_sets as c', 'c.seq', 'e.change_set_seq')
      .select(['c.id', 'c.environment', 'e.name', 'e.before', 'e.after'])
      .where('c.vault_id', '=', vaultId),
  )
  const webhooks = yield* all(
    d.db.selectFrom('webhooks').select(['id', 'sealed_secret']).where('vault_id', '=', vaultId).where('sealed_secret', 'is not', null),
  )
  const overrides = yield* all(d.db.selectFrom('overrides').select(['environment', 'name', 'person_id', 'sealed']).where('vault_id', '=', vaultId))
  const side = (h: (typeof kept)[number], s: 'before' | 'after') => {
    const sealed = h[s]
    return sealed ? [{ changeSetId: h.id, environment: h.environment, name: h.name, side: s, sealed: copyBytes(sealed) }] : []
  }
  return {
    wrappedKey: copyBytes(v.wrapped_key),
    variables: variables.map((r) => ({ environment: r.environment, name: r.name, sealed: copyBytes(r.sealed) })),
    staged: staged.map((r) => ({ importId: r.import_id, environment: r.environment, name: r.name, sealed: copyBytes(r.sealed) })),
    history: kept.flatMap((h) => [...side(h, 'before'), ...side(h, 'after')]),
    webhooks: webhooks.map((w) => ({ webhookId: w.id, sealed: copyBytes(w.sealed_secret as Uint8Array) })),
    overrides: overrides.map((o) => ({ environment: o.environment, name: o.name, personId: o.person_id, sealed: copyBytes(o.sealed) })),
  }
}

const sameKey = (a: Uint8Array | null, b: Uint8Array | null): boolean => (a === null || b === null ? a === b : Buffer.from(a).equals(Buffer.from(b)))

/** Runs an update that must change exactly one row; else 23503 (the transaction rolls back). */
function* one(q: Parameters<typeof run>[0], table: string): Op<void> {
  if ((yield* run(q)) !== 1) throw new StorageError('23503', table)
}

function* swapWrappedKey(d: SqlDialect, swap: KeySwap): Op<ChangeResult<'changed' | 'not_found'>> {
  const { vaultId } = swap
  const v = yield* lockVault(d, vaultId)
  if (!v) return { ok: false, reason: 'not_found' }
  if (swap.kind === 'key') {
    if (!sameKey(v.wrapped_key ?? null, swap.expect)) return { ok: false, reason: 'changed' }
    yield* run(
      d.db
        .updateTable('vaults')
        .set({ wrapped_key: bytes(swap.next) })
        .where('id', '=', vaultId),
    )
    return { ok: true, value: undefined }
  }
  const current = yield* readSecrets(d, vaultId)
  if (!current || !sameSecrets(current, swap.expect)) return { ok: false, reason: 'changed' }
  const next = swap.next
  yield* run(
    d.db
      .updateTable('vaults')
      .set({ wrapped_key: bytes(next.wrappedKey) })
      .where('id', '=', vaultId),
  )
  for (const n of next.variables) {
    const q = d.db
      .updateTable('variables')
      .set({ sealed: bytes(n.sealed) })
      .where('vault_id', '=', vaultId)
      .where('environment', '=', n.environment)
      .where('name', '=', n.name)
    yield* one(q, 'variables')
  }
  for (const n of next.staged) {
    yield* one(
      d.db
        .updateTable('import_values')
        .set({ sealed: bytes(n.sealed) })
        .where('import_id', '=', n.importId)
        .where('name', '=', n.name),
      'import_values',
    )
  }
  // sealed anew, the staged values may differ in size
  if (next.staged.length > 0) yield* recountStaged(d, vaultId)
  for (const n of next.history) {
    const q = d.db
      .updateTable('change_entries')
      .set(n.side === 'before' ? { before: bytes(n.sealed) } : { after: bytes(n.sealed) })
      .where('name', '=', n.name)
      .where(n.side, 'is not', null)
      .where('change_set_seq', '=', (eb) => eb.selectFrom('change_sets').select('seq').where('id', '=', n.changeSetId).where('vault_id', '=', vaultId))
    yield* one(q, 'change_entries')
  }
  for (const n of next.webhooks ?? []) {
    const q = d.db
      .updateTable('webhooks')
      .set({ sealed_secret: bytes(n.sealed) })
      .where('id', '=', n.webhookId)
      .where('vault_id', '=', vaultId)
      .where('sealed_secret', 'is not', null)
    yield* one(q, 'webhooks')
  }
  for (const n of next.overrides ?? []) {
    const q = d.db
      .updateTable('overrides')
      .set({ sealed: bytes(n.sealed) })
      .where('vault_id', '=', vaultId)
      .where('environment', '=', n.environment)
      .where('name', '=', n.name)
      .where('person_id', '=', n.personId)
    yield* one(q, 'overrides')
  }
  yield* run(
    d.db
      .updateTable('environments')
      .set({ version: (eb) => eb('version', '+', 1) })
      .where('vault_id', '=', vaultId),
  )
  return { ok: true, value: undefined }
}

import type { VaultSecrets, VaultStore } from '@envkeep/env-api-plugin'
import { StorageError } from '@envkeep/env-api-plugin'
import { sql } from 'kysely'
import { bytes, SqliteStoreBase } from './sqlite-store-base.js'
import { holdConnection, wrapStorage } from './sqlite-errors.js'

/**
 * A vault's data key on SQLite: made once, rewrapped by a master-key rotation, replaced
 * with every sealed value by a data-key rotation. The rotations hold one IMMEDIATE
 * transaction across the awaited (async) rewrap or reseal, so no key can be stored meanwhile.
 */
export class SqliteKeyStore extends SqliteStoreBase implements Pick<VaultStore, 'getWrappedKey' | 'ensureWrappedKey' | 'rewrapKeys' | 'resealVault'> {
  getWrappedKey(vaultId: string): Promise<Uint8Array | null> {
    return this.tx('none', 'vaults', () => {
      const r = this.first(this.db.selectFrom('vaults').select('wrapped_key').where('id', '=', vaultId))
      return r?.wrapped_key ?? null
    })
  }

  /**
   * Holds the connection (kysely's mutex, an IMMEDIATE transaction) across
   * the awaited `wrap`, like rewrapKeys: a rotation in this or another
   * process commits either before the key is wrapped or after it is stored.
   */
  ensureWrappedKey(vaultId: string, wrap: () => Promise<Uint8Array>): Promise<Uint8Array> {
    return wrapStorage(
      () =>
        holdConnection(this.d, async (conn) => {
          await sql`begin immediate`.execute(conn)
          try {
            const r = await conn.selectFrom('vaults').select('wrapped_key').where('id', '=', vaultId).executeTakeFirst()
            if (!r) throw new StorageError('23503', 'vaults')
            let key = r.wrapped_key
            if (!key) {
              key = await wrap()
              await conn
                .updateTable('vaults')
                .set({ wrapped_key: bytes(key) })
                .where('id', '=', vaultId)
                .execute()
            }
            await sql`commit`.execute(conn)
            return key
          } catch (err) {
            if (this.d.sqlite.inTransaction) await sql`rollback`.execute(conn)
            throw err
          }
        }),
      'vaults',
    )
  }

  /**
   * Holds the connection (kysely's mutex, an IMMEDIATE transaction) across
   * the awaited `rewrap` calls, so no data key can be created or read
   * half-rotated meanwhile; any failure rolls every key back.
   */
  rewrapKeys(rewrap: (wrapped: Uint8Array, vaultId: string) => Promise<Uint8Array>): Promise<number> {
    return wrapStorage(
      () =>
        holdConnection(this.d, async (conn) => {
          await sql`begin immediate`.execute(conn)
          try {
            const rows = await conn.selectFrom('vaults').select(['id', 'wrapped_key']).where('wrapped_key', 'is not', null).orderBy('id').execute()
            for (const r of rows) {
              const next = await rewrap(r.wrapped_key as Uint8Array, r.id)
              await conn
                .updateTable('vaults')
                .set({ wrapped_key: bytes(next) })
                .where('id', '=', r.id)
                .execute()
            }
            await sql`commit`.execute(conn)
            return rows.length
          } catch (err) {
            if (this.d.sqlite.inTransaction) await sql`rollback`.execute(conn)
            throw err
          }
        }),
      'vaults',
    )
  }

  /** Holds the connection in one IMMEDIATE transaction across the awaited `reseal`, like rewrapKeys. */
  resealVault(vaultId: string, reseal: (current: VaultSecrets) => Promise<VaultSecrets>): Promise<boolean> {
    return wrapStorage(
      () =>
        holdConnection(this.d, async (conn) => {
          await sql`begin immediate`.execute(conn)
          try {
            const v = await conn.selectFrom('vaults').select('wrapped_key').where('id', '=', vaultId).executeTakeFirst()
            if (!v?.wrapped_key) {
              await sql`commit`.execute(conn)
              return false
            }
            const variables = await conn
              .selectFrom('variables')
              .select(['environment', 'name', 'sealed'])
              .where('vault_id', '=', vaultId)
              .orderBy('environment')
              .orderBy('name')
              .execute()
            const staged = await conn
              .selectFrom('import_values as iv')
              .innerJoin('imports as i', 'i.id', 'iv.import_id')
              .select(['iv.import_id as importId', 'i.environment', 'iv.name', 'iv.sealed'])
              .where('i.vault_id', '=', vaultId)
              .where('i.status', '=', 'pending')
              .execute()
            const kept = await conn
              .selectFrom('change_entries as e')
              .innerJoin('change_sets as c', 'c.seq', 'e.change_set_seq')
              .select(['c.id as changeSetId', 'c.environment', 'e.name', 'e.before', 'e.after'])
              .where('c.vault_id', '=', vaultId)
              .orderBy('c.seq')
              .orderBy('e.name')
              .execute()
            const history = kept.flatMap((h) => [
              ...(h.before ? [{ changeSetId: h.changeSetId, environment: h.environment, name: h.name, side: 'before' as const, sealed: h.before }] : []),
              ...(h.after ? [{ changeSetId: h.changeSetId, environment: h.environment, name: h.name, side: 'after' as const, sealed: h.after }] : []),
            ])
            const webhooks = (
              await sql<{
                webhookId: string
                sealed: Buffer
              }>`select id as webhookId, sealed_secret as sealed from webhooks where vault_id = ${vaultId} and sealed_secret is not null order by id`.execute(
                conn,
              )
            ).rows
            const overrides = (
              await sql<{
                environment: string
                name: string
                personId: string
                sealed: Buffer
              }>`select environment, name, person_id as personId, sealed from overrides where vault_id = ${vaultId} order by environment, name, person_id`.execute(
                conn,
              )
            ).rows
            const next = await reseal({ wrappedKey: v.wrapped_key, variables, staged, history, webhooks, overrides })
            for (const n of next.overrides ?? []) {
              const r = await sql`update overrides set sealed = ${bytes(n.sealed)}
                where vault_id = ${vaultId} and environment = ${n.environment} and name = ${n.name} and person_id = ${n.personId}`.execute(conn)
              if (r.numAffectedRows !== 1n) throw new StorageError('23503', 'overrides')
            }
            for (const n of next.webhooks ?? []) {
              const r =
                await sql`update webhooks set sealed_secret = ${bytes(n.sealed)} where id = ${n.webhookId} and vault_id = ${vaultId} and sealed_secret is not null`.execute(
                  conn,
                )
              if (r.numAffectedRows !== 1n) throw new StorageError('23503', 'webhooks')
            }
            await conn
              .updateTable('vaults')
              .set({ wrapped_key: bytes(next.wrappedKey) })
              .where('id', '=', vaultId)
              .execute()
            for (const n of next.variables) {
              const r = await conn
                .updateTable('variables')
                .set({ sealed: bytes(n.sealed) })
                .where('vault_id', '=', vaultId)
                .where('environment', '=', n.environment)
                .where('name', '=', n.name)
                .executeTakeFirst()
              if (r.numUpdatedRows !== 1n) throw new StorageError('23503', 'variables')
            }
            for (const n of next.staged) {
              const r = await conn
                .updateTable('import_values')
                .set({ sealed: bytes(n.sealed) })
                .where('import_id', '=', n.importId)
                .where('name', '=', n.name)
                .executeTakeFirst()
              if (r.numUpdatedRows !== 1n) throw new StorageError('23503', 'import_values')
            }
            for (const n of next.history) {
              const r = await sql`update change_entries set ${sql.ref(n.side)} = ${bytes(n.sealed)}
                where name = ${n.name} and ${sql.ref(n.side)} is not null
                  and change_set_seq = (select seq from change_sets where id = ${n.changeSetId} and vault_id = ${vaultId})`.execute(conn)
              if (r.numAffectedRows !== 1n) throw new StorageError('23503', 'change_entries')
            }
            await conn.updateTable('environments').set({ version: sql<number>`"version" + 1` }).where('vault_id', '=', vaultId).execute()
            await sql`commit`.execute(conn)
            return true
          } catch (err) {
            if (this.d.sqlite.inTransaction) await sql`rollback`.execute(conn)
            throw err
          }
        }),
      'vaults',
    )
  }
}

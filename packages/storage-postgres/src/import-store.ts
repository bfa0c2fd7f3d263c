import type {
  AccessLogEntry,
  CreateImportResult,
  DecideImportResult,
  ImportDecision,
  ImportRecord,
  ImportStore,
  NewImport,
  SealedVariable,
} from '@envkeep/env-api-plugin'
import { expiredPush, overwritesOf, pushExpiredEntry, pushHasExpired, StorageError, storageLimitRefusal } from '@envkeep/env-api-plugin'
import { sql, type Kysely } from 'kysely'
import { inTransaction, read } from './database.js'
import { insertChangeSet } from './history-store.js'
import { bumpVersion, bytes, copy, insertLog, json, lockVault, rows, toImport, usageOf, type ImportRow } from './rows.js'

type Q = Kysely<unknown>

/**
 * Pushes on PostgreSQL (the plugin's adapters/import-store.ts). Each change locks the
 * vault's row first, as every change of the vault store does, so the limit, the expiry
 * and the decision hold under any number of processes.
 */
export class PostgresImportStore implements ImportStore {
  readonly #db: Q

  constructor(db: Q) {
    this.#db = db
  }

  async #expire(trx: Q, imp: ImportRecord): Promise<ImportRecord> {
    await sql`update imports set status = 'expired', decided_at = expires_at, decided_by = null where id = ${imp.id}`.execute(trx)
    await sql`delete from import_values where import_id = ${imp.id}`.execute(trx)
    await insertLog(trx, pushExpiredEntry(imp))
    return expiredPush(imp)
  }

  createImport(input: NewImport, log: AccessLogEntry): Promise<CreateImportResult> {
    return inTransaction(this.#db, async (trx): Promise<CreateImportResult> => {
      const vault = await lockVault(trx, input.vaultId)
      if (input.sealedUnder && !(vault?.wrapped_key && Buffer.from(vault.wrapped_key).equals(bytes(input.sealedUnder))))
        return { ok: false, reason: 'stale_key' }
      const before = await usageOf(trx, input.vaultId)
      const add = input.values.reduce((n, v) => n + v.sealed.byteLength, 0)
      const over = storageLimitRefusal(before, { n: before.n + input.values.length, bytes: before.bytes + add }, input.limit)
      if (over) return over
      const byName = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)
      const valued = input.values.map((v) => v.name).sort(byName)
      const deletes = [...(input.deletes ?? [])].sort(byName)
      const names = [...valued, ...deletes].sort(byName)
      const current = new Set(
        (
          await rows<{ name: string }>(
            trx,
            sql`select name from variables where vault_id = ${input.vaultId} and environment = ${input.environment} and name = any(${valued}::text[])`,
          )
        ).map((r) => r.name),
      )
      const refused = input.refused.map((r) => ({ line: r.line, name: r.name, reason: r.reason }))
      const overwrites = overwritesOf(valued, current)
      await sql`insert into imports (id, vault_id, environment, sender_id, sign_in_id, status, names, overwrites, deletes, refused, created_at, expires_at)
        values (${input.id}, ${input.vaultId}, ${input.environment}, ${input.senderId}, ${input.signInId}, 'pending', ${json(names)}, ${json(overwrites)}, ${json(deletes)}, ${json(refused)}, ${input.createdAt.getTime()}, ${input.expiresAt.getTime()})`.execute(
        trx,
      )
      for (const v of input.values) {
        await sql`insert into import_values (import_id, name, sealed) values (${input.id}, ${v.name}, ${bytes(v.sealed)})`.execute(trx)
      }
      await insertLog(trx, log)
      return {
        ok: true,
        import: {
          id: input.id,
          vaultId: input.vaultId,
          environment: input.environment,
          senderId: input.senderId,
          signInId: input.signInId,
          status: 'pending',
          names,
          overwrites,
          deletes,
          refused,
          createdAt: input.createdAt,
          expiresAt: input.expiresAt,
          decidedAt: null,
          decidedBy: null,
          reason: null,
        },
      }
    })
  }

  async getImport(importId: string, now: Date): Promise<ImportRecord | null> {
    const [r] = await read(() => rows<ImportRow>(this.#db, sql`select * from imports where id = ${importId}`))
    if (!r) return null
    const imp = toImport(r)
    if (!pushHasExpired(imp, now)) return imp
    return inTransaction(this.#db, async (trx) => {
      await lockVault(trx, imp.vaultId)
      const [fresh] = await rows<ImportRow>(trx, sql`select * from imports where id = ${importId}`)
      if (!fresh) return null
      const f = toImport(fresh)
      return f.status === 'pending' ? this.#expire(trx, f) : f
    })
  }

  getImportValues(importId: string): Promise<SealedVariable[]> {
    return read(async () =>
      (
        await rows<{ name: string; sealed: Buffer }>(
          this.#db,
          sql`select name, sealed from import_values where import_id = ${importId} order by name collate "C"`,
        )
      ).map((v) => ({
        name: v.name,
        sealed: copy(v.sealed),
      })),
    )
  }

  decideImport(d: ImportDecision, log: AccessLogEntry): Promise<DecideImportResult> {
    return inTransaction(this.#db, async (trx): Promise<DecideImportResult> => {
      const [head] = await rows<{ vault_id: string }>(trx, sql`select vault_id from imports where id = ${d.importId}`)
      if (!head) throw new StorageError('23503', 'imports')
      await lockVault(trx, head.vault_id)
      const [r] = await rows<ImportRow>(trx, sql`select * from imports where id = ${d.importId}`)
      const imp = toImport(r!)
      if (imp.status !== 'pending') return { ok: false, reason: 'not_pending', import: imp }
      if (pushHasExpired(imp, d.now)) return { ok: false, reason: 'not_pending', import: await this.#expire(trx, imp) }
      if (d.decision === 'applied' && d.ifVersion !== undefined) {
        const [v] = await rows<{ version: number }>(trx, sql`select version from environments where vault_id = ${imp.vaultId} and name = ${imp.environment}`)
        if (Number(v?.version ?? 0) !== d.ifVersion) return { ok: false, reason: 'changed', import: imp }
      }
      if (d.decision === 'applied') {
        if (d.changeSet) await insertChangeSet(trx, d.changeSet)
        const staged = await rows<{ name: string }>(
          trx,
          sql`insert into variables (vault_id, environment, name, sealed, updated_at, updated_by)
            select ${imp.vaultId}, ${imp.environment}, name, sealed, ${d.now.getTime()}, ${d.by} from import_values where import_id = ${imp.id}
            on conflict (vault_id, environment, name) do update set sealed = excluded.sealed, updated_at = excluded.updated_at, updated_by = excluded.updated_by
            returning name`,
        )
        const deleted =
          imp.deletes.length === 0
            ? []
            : await rows<{ name: string }>(
                trx,
                sql`delete from variables where vault_id = ${imp.vaultId} and environment = ${imp.environment} and name = any(${[...imp.deletes]}::text[]) returning name`,
              )
        if (staged.length > 0 || deleted.length > 0) await bumpVersion(trx, imp.vaultId, imp.environment)
      }
      await sql`delete from import_values where import_id = ${imp.id}`.execute(trx)
      const reason = d.decision === 'rejected' ? (d.reason ?? null) : null
      await sql`update imports set status = ${d.decision}, decided_at = ${d.now.getTime()}, decided_by = ${d.by}, reason = ${reason} where id = ${imp.id}`.execute(
        trx,
      )
      await insertLog(trx, log)
      return { ok: true, import: { ...imp, status: d.decision, decidedAt: d.now, decidedBy: d.by, reason } }
    })
  }

  expireImports(now: Date): Promise<number> {
    return inTransaction(this.#db, async (trx) => {
      // skip locked: several processes sweep at once, each push expires exactly once
      const due = await rows<ImportRow>(
        trx,
        sql`select * from imports where status = 'pending' and expires_at <= ${now.getTime()} order by expires_at for update skip locked`,
      )
      for (const r of due) await this.#expire(trx, toImport(r))
      return due.length
    })
  }

  listImports(vaultId: string, filter: { status?: ImportRecord['status']; limit: number }): Promise<ImportRecord[]> {
    return read(async () =>
      (
        await rows<ImportRow>(
          this.#db,
          sql`select * from imports where vault_id = ${vaultId} ${filter.status !== undefined ? sql`and status = ${filter.status}` : sql``}
            order by created_at desc, id desc limit ${Math.max(0, Math.trunc(filter.limit))}`,
        )
      ).map(toImport),
    )
  }
}

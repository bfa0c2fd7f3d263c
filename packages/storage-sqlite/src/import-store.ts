import type {
  AccessLogEntry,
  CreateImportResult,
  DecideImportResult,
  ImportDecision,
  ImportRecord,
  ImportStatus,
  ImportStore,
  NewImport,
  RefusedLine,
  SealedVariable,
} from '@envkeep/env-api-plugin'
import { overwritesOf, pushExpiredEntry, pushHasExpired, StorageError, storageLimitRefusal } from '@envkeep/env-api-plugin'
import { insertChangeSet } from './history-store.js'
import type { ImportsTable } from './schema.js'
import { bytes, SqliteStoreBase } from './sqlite-store-base.js'

type ImportRow = ImportsTable

const ENV_VERSION_SQL = 'select "version" from "environments" where "vault_id" = ? and "name" = ?'

function byName(a: { name: string }, b: { name: string }): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0
}

export function toImport(r: ImportRow): ImportRecord {
  return {
    id: r.id,
    vaultId: r.vault_id,
    environment: r.environment,
    senderId: r.sender_id,
    signInId: r.sign_in_id,
    status: r.status,
    names: JSON.parse(r.names) as string[],
    overwrites: JSON.parse(r.overwrites) as string[],
    deletes: JSON.parse(r.deletes) as string[],
    refused: JSON.parse(r.refused) as RefusedLine[],
    createdAt: new Date(r.created_at),
    expiresAt: new Date(r.expires_at),
    decidedAt: r.decided_at === null ? null : new Date(r.decided_at),
    decidedBy: r.decided_by,
    reason: r.reason ?? null,
  }
}

/** Pushes on SQLite (the plugin's adapters/import-store.ts): tables imports and import_values. */
export class SqliteImportStore extends SqliteStoreBase implements ImportStore {
  #importRow(importId: string): ImportRow | undefined {
    return this.first<ImportRow>(this.db.selectFrom('imports').selectAll().where('id', '=', importId))
  }

  /** Moves a pending push to `expired` (decided at its expiry), drops its staged values, logs it. */
  #expire(r: ImportRow): ImportRow {
    const changed = this.run(
      this.db
        .updateTable('imports')
        .set({ status: 'expired', decided_at: r.expires_at, decided_by: null })
        .where('id', '=', r.id)
        .where('status', '=', 'pending'),
    )
    if (changed === 0) return this.#importRow(r.id) ?? r
    this.run(this.db.deleteFrom('import_values').where('import_id', '=', r.id))
    this.log(pushExpiredEntry(toImport(r)))
    return { ...r, status: 'expired', decided_at: r.expires_at, decided_by: null }
  }

  createImport(input: NewImport, log: AccessLogEntry): Promise<CreateImportResult> {
    return this.tx('immediate', 'imports', (): CreateImportResult => {
      if (this.staleKey(input.vaultId, input.sealedUnder)) return { ok: false, reason: 'stale_key' }
      const before = this.usage(input.vaultId)
      const newBytes = input.values.reduce((s, v) => s + v.sealed.byteLength, 0)
      const over = storageLimitRefusal(before, { n: before.n + input.values.length, bytes: before.bytes + newBytes }, input.limit)
      if (over) return over

      const existing = new Set(
        this.all(this.db.selectFrom('variables').select('name').where('vault_id', '=', input.vaultId).where('environment', '=', input.environment)).map(
          (r) => r.name,
        ),
      )
      const values = [...input.values].sort(byName)
      const deletes = [...(input.deletes ?? [])].sort()
      const valued = values.map((v) => v.name)
      const names = [...valued, ...deletes].sort()
      const overwrites = overwritesOf(valued, existing)
      const row: ImportRow = {
        id: input.id,
        vault_id: input.vaultId,
        environment: input.environment,
        sender_id: input.senderId,
        sign_in_id: input.signInId,
        status: 'pending',
        names: JSON.stringify(names),
        overwrites: JSON.stringify(overwrites),
        deletes: JSON.stringify(deletes),
        refused: JSON.stringify(input.refused.map((r) => ({ line: r.line, name: r.name, reason: r.reason }))),
        created_at: input.createdAt.getTime(),
        expires_at: input.expiresAt.getTime(),
        decided_at: null,
        decided_by: null,
      }
      this.run(this.db.insertInto('imports').values(row))
      for (const v of values) {
        this.run(this.db.insertInto('import_values').values({ import_id: input.id, name: v.name, sealed: bytes(v.sealed) }))
      }
      this.log(log)
      return { ok: true, import: toImport(row) }
    })
  }

  async getImport(importId: string, now: Date): Promise<ImportRecord | null> {
    const r = await this.tx('none', 'imports', () => this.#importRow(importId))
    if (!r) return null
    const imp = toImport(r)
    if (!pushHasExpired(imp, now)) return imp
    return this.tx('immediate', 'imports', () => {
      const fresh = this.#importRow(importId)
      if (!fresh) return null
      return toImport(fresh.status === 'pending' ? this.#expire(fresh) : fresh)
    })
  }

  getImportValues(importId: string): Promise<SealedVariable[]> {
    return this.tx('none', 'import_values', () =>
      this.all(this.db.selectFrom('import_values').select(['name', 'sealed']).where('import_id', '=', importId).orderBy('name')).map((r) => ({
        name: r.name,
        sealed: r.sealed,
      })),
    )
  }

  decideImport(d: ImportDecision, log: AccessLogEntry): Promise<DecideImportResult> {
    const { importId, decision, by } = d
    const at = d.now.getTime()
    return this.tx('immediate', 'imports', (): DecideImportResult => {
      const r = this.#importRow(importId)
      if (!r) throw new StorageError('23503', 'imports')
      if (r.status !== 'pending') return { ok: false, reason: 'not_pending', import: toImport(r) }
      if (pushHasExpired(toImport(r), d.now)) return { ok: false, reason: 'not_pending', import: toImport(this.#expire(r)) }
      if (decision === 'applied' && d.ifVersion !== undefined) {
        const v = this.stmt(ENV_VERSION_SQL).get(r.vault_id, r.environment) as { version: number } | undefined
        if ((v?.version ?? 0) !== d.ifVersion) return { ok: false, reason: 'changed', import: toImport(r) }
      }
      if (decision === 'applied') {
        if (d.changeSet) insertChangeSet(this.d, d.changeSet)
        const staged = this.all(this.db.selectFrom('import_values').select(['name', 'sealed']).where('import_id', '=', importId).orderBy('name'))
        for (const v of staged) this.upsertVariable(r.vault_id, r.environment, v, by, at)
        const gone = JSON.parse(r.deletes) as string[]
        const deleted =
          gone.length === 0
            ? 0
            : this.run(this.db.deleteFrom('variables').where('vault_id', '=', r.vault_id).where('environment', '=', r.environment).where('name', 'in', gone))
        if (staged.length > 0 || deleted > 0) this.bumpVersion(r.vault_id, r.environment)
      }
      this.run(this.db.deleteFrom('import_values').where('import_id', '=', importId))
      this.run(
        this.db
          .updateTable('imports')
          .set({ status: decision, decided_at: at, decided_by: by, reason: decision === 'rejected' ? (d.reason ?? null) : null })
          .where('id', '=', importId)
          .where('status', '=', 'pending'),
      )
      this.log(log)
      return {
        ok: true,
        import: toImport({ ...r, status: decision, decided_at: at, decided_by: by, reason: decision === 'rejected' ? (d.reason ?? null) : null }),
      }
    })
  }

  expireImports(now: Date): Promise<number> {
    return this.tx('immediate', 'imports', () => {
      const due = this.all<ImportRow>(
        this.db.selectFrom('imports').selectAll().where('status', '=', 'pending').where('expires_at', '<=', now.getTime()).orderBy('expires_at'),
      )
      for (const r of due) this.#expire(r)
      return due.length
    })
  }

  listImports(vaultId: string, filter: { status?: ImportStatus; limit: number }): Promise<ImportRecord[]> {
    return this.tx('none', 'imports', () => {
      let q = this.db.selectFrom('imports').selectAll().where('vault_id', '=', vaultId)
      if (filter.status !== undefined) q = q.where('status', '=', filter.status)
      const limit = Math.max(0, Math.trunc(filter.limit))
      return this.all<ImportRow>(q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit)).map(toImport)
    })
  }
}

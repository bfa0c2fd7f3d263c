import type {
  CreateImportResult,
  DecideImportResult,
  ImportDecision,
  ImportRead,
  ImportReadOptions,
  ImportRecord,
  ImportStore,
  NewImport,
} from '../adapters/import-store.js'
import type { ChangeResult } from '../adapters/results.js'
import { expiredPush, overwritesOf, plannedPush, pushExpiredEntry, pushHasExpired } from '../domain/storage-rules.js'
import type { AccessLogEntry, SealedVariable } from '../adapters/vault-store.js'
import { StorageError } from '../errors.js'
import { copyBytes, varKey, type MemoryDb, type State, webhooksOf } from './memory-state.js'
import { sameBytes, usage } from './memory-vault-store.js'

const byKey = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)

/** The reference store's pushes (adapters/import-store.ts), on the memory state. */
export class MemoryImportStore implements ImportStore {
  readonly #db: MemoryDb

  constructor(db: MemoryDb) {
    this.#db = db
  }

  /** Moves a pending push to expired in the draft, with its log entry. */
  #expire(s: State, imp: ImportRecord): ImportRecord {
    const expired: ImportRecord = Object.freeze(expiredPush(imp))
    s.imports.set(imp.id, expired)
    s.importValues.delete(imp.id)
    this.#db.appendLog(s, pushExpiredEntry(imp))
    return expired
  }

  createImport(input: NewImport, log: AccessLogEntry): Promise<CreateImportResult> {
    return this.#db.write('imports', async (s): Promise<CreateImportResult> => {
      if (input.sealedUnder && !sameBytes(s.vaults.get(input.vaultId)?.wrappedKey ?? null, input.sealedUnder)) return { ok: false, reason: 'stale_key' }
      const before = usage(s, input.vaultId)
      const { over, valued, deletes, names } = plannedPush(input, before)
      if (over) return over
      await this.#db.step()
      if (s.imports.has(input.id)) throw new StorageError('23505', 'imports_pk')
      if (!s.environments.get(input.vaultId)?.has(input.environment)) throw new StorageError('23503', 'imports_environment')
      const current = s.variables.get(varKey(input.vaultId, input.environment)) ?? new Map()
      const imp: ImportRecord = Object.freeze({
        id: input.id,
        vaultId: input.vaultId,
        environment: input.environment,
        senderId: input.senderId,
        signInId: input.signInId,
        status: 'pending',
        names,
        overwrites: overwritesOf(valued, current),
        deletes,
        refused: input.refused.map((r) => ({ line: r.line, name: r.name, reason: r.reason })),
        createdAt: input.createdAt,
        expiresAt: input.expiresAt,
        decidedAt: null,
        decidedBy: null,
        reason: null,
      })
      s.imports.set(imp.id, imp)
      const staged = new Map<string, Uint8Array>()
      for (const v of input.values) {
        this.#db.checkWrite('import_values', v.name)
        if (staged.has(v.name)) throw new StorageError('23505', 'import_values_pk')
        staged.set(v.name, copyBytes(v.sealed))
      }
      s.importValues.set(imp.id, staged)
      this.#db.appendLog(s, log)
      return { ok: true, value: imp, webhooks: webhooksOf(s, input.vaultId).length > 0 }
    })
  }

  async getImport<O extends ImportReadOptions = ImportReadOptions>(importId: string, now: Date, options?: O): Promise<ImportRead<O> | null> {
    const found = await this.#db.read('imports', (s) => this.#withValues(s, s.imports.get(importId) ?? null, options))
    if (!found || !pushHasExpired(found, now)) return found as ImportRead<O> | null
    return this.#db.write('imports', (s) => {
      const fresh = s.imports.get(importId)
      if (!fresh) return null
      return this.#withValues(s, fresh.status === 'pending' ? this.#expire(s, fresh) : fresh, options) as ImportRead<O>
    })
  }

  /** A push with its staged values (in name order; none once decided) when asked. */
  #withValues(s: State, imp: ImportRecord | null, options: ImportReadOptions | undefined): ImportRecord | null {
    if (!imp || options?.values !== true) return imp
    const values = [...(s.importValues.get(imp.id) ?? new Map<string, Uint8Array>()).entries()]
      .sort(([a], [b]) => byKey(a, b))
      .map(([name, sealed]): SealedVariable => ({ name, sealed: copyBytes(sealed) }))
    return { ...imp, values } as ImportRecord
  }

  decideImport(d: ImportDecision, log: AccessLogEntry): Promise<DecideImportResult> {
    return this.#db.write('imports', async (s): Promise<DecideImportResult> => {
      const imp = s.imports.get(d.importId)
      if (!imp) throw new StorageError('23503', 'imports')
      if (imp.status !== 'pending') return { ok: false, reason: 'not_pending' }
      if (pushHasExpired(imp, d.now)) {
        this.#expire(s, imp)
        return { ok: false, reason: 'not_pending' }
      }
      const version = s.environments.get(imp.vaultId)?.get(imp.environment)?.version ?? 0
      if (d.decision === 'applied' && d.ifVersion !== undefined && d.ifVersion !== version) return { ok: false, reason: 'changed' }
      await this.#db.step()
      const at = d.now.getTime()
      if (d.decision === 'applied') {
        if (d.changeSet) this.#db.putChangeSet(s, d.changeSet)
        const staged = [...(s.importValues.get(imp.id) ?? new Map<string, Uint8Array>()).entries()].sort(([a], [b]) => byKey(a, b))
        for (const [name, sealed] of staged) this.#db.putVariable(s, imp.vaultId, imp.environment, { name, sealed }, d.by, at)
        const vars = s.variables.get(varKey(imp.vaultId, imp.environment))
        const deleted = imp.deletes.filter((name) => vars?.delete(name) === true)
        if (staged.length > 0 || deleted.length > 0) this.#db.bumpVersion(s, imp.vaultId, imp.environment)
      }
      s.importValues.delete(imp.id)
      const decided: ImportRecord = Object.freeze({
        ...imp,
        status: d.decision,
        decidedAt: d.now,
        decidedBy: d.by,
        reason: d.decision === 'rejected' ? (d.reason ?? null) : null,
      })
      s.imports.set(imp.id, decided)
      this.#db.appendLog(s, log)
      return { ok: true, value: decided, webhooks: webhooksOf(s, imp.vaultId).length > 0 }
    })
  }

  expireImports(now: Date): Promise<ChangeResult<never, number>> {
    return this.#db.write('imports', (s): ChangeResult<never, number> => {
      const due = [...s.imports.values()]
        .filter((i) => i.status === 'pending' && i.expiresAt.getTime() <= now.getTime())
        .sort((a, b) => a.expiresAt.getTime() - b.expiresAt.getTime())
      for (const imp of due) this.#expire(s, imp)
      return { ok: true, value: due.length }
    })
  }

  listImports(vaultId: string, filter: { status?: ImportRecord['status']; limit: number }): Promise<ImportRecord[]> {
    return this.#db.read('imports', (s) =>
      [...s.imports.values()]
        .filter((i) => i.vaultId === vaultId && (filter.status === undefined || i.status === filter.status))
        .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || byKey(b.id, a.id))
        .slice(0, Math.max(0, Math.trunc(filter.limit))),
    )
  }
}

import type {
  ChangeEntry,
  ChangeSetFilter,
  ChangeSetList,
  ChangeSetSummary,
  ChangeVariablesResult,
  CurrentOptions,
  CurrentState,
  HistoryStore,
  VariablesChange,
} from '../adapters/history-store.js'
import type { ChangeResult } from '../adapters/results.js'
import type { AccessLogEntry } from '../adapters/vault-store.js'
import { StorageError } from '../errors.js'
import { type ChangeSetRow, copyBytes, type MemoryDb, type State, varKey } from './memory-state.js'
import { sameBytes, usage } from './memory-vault-store.js'
import { storageLimitRefusal } from '../domain/storage-rules.js'

const byKey = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)

function copyEntry(e: ChangeEntry): ChangeEntry {
  return { name: e.name, kind: e.kind, before: e.before && copyBytes(e.before), after: e.after && copyBytes(e.after) }
}

function summary(c: ChangeSetRow): ChangeSetSummary {
  const names = (kind: ChangeEntry['kind']) => c.entries.filter((e) => e.kind === kind).map((e) => e.name)
  return {
    id: c.id,
    seq: c.seq,
    vaultId: c.vaultId,
    environment: c.environment,
    at: new Date(c.at),
    by: c.by,
    how: c.how,
    ref: c.ref,
    added: names('added'),
    changed: names('changed'),
    deleted: names('deleted'),
  }
}

/** The reference history store (history-store.ts), on the memory state's change sets. */
export class MemoryHistoryStore implements HistoryStore {
  readonly #db: MemoryDb

  constructor(db: MemoryDb) {
    this.#db = db
  }

  readCurrent<O extends CurrentOptions = CurrentOptions>(vaultId: string, environment: string, options?: O): Promise<CurrentState<O>> {
    return this.#db.read('variables', (s) => {
      const vars = s.variables.get(varKey(vaultId, environment)) ?? new Map()
      const names = options?.names
      const wanted = (names === undefined ? [...vars.keys()] : [...new Set(names)].filter((n) => vars.has(n))).sort(byKey)
      const version = s.environments.get(vaultId)?.get(environment)?.version ?? 0
      if (options?.values === false) {
        const metas = wanted.map((name) => ({ name, updatedAt: new Date(vars.get(name).updatedAt), updatedBy: vars.get(name).updatedBy }))
        return { version, variables: metas } as CurrentState<O>
      }
      return { version, variables: wanted.map((name) => ({ name, sealed: copyBytes(vars.get(name).sealed) })) } as CurrentState<O>
    })
  }

  changeVariables(change: VariablesChange, log: AccessLogEntry): Promise<ChangeVariablesResult> {
    return this.#db.write('variables', async (s): Promise<ChangeVariablesResult> => {
      const env = s.environments.get(change.vaultId)?.get(change.environment)
      if (!env) throw new StorageError('23503', 'variables_environment')
      if (env.version !== change.ifVersion) return { ok: false, reason: 'changed' }
      if (change.sealedUnder && !sameBytes(s.vaults.get(change.vaultId)?.wrappedKey ?? null, change.sealedUnder)) return { ok: false, reason: 'stale_key' }
      await this.#db.step()
      const vars = s.variables.get(varKey(change.vaultId, change.environment)) ?? new Map()
      const before = usage(s, change.vaultId)
      const after = { ...before }
      for (const v of change.set) {
        const old = vars.get(v.name)
        after.n += old ? 0 : 1
        after.bytes += v.sealed.byteLength - (old?.sealed.byteLength ?? 0)
      }
      for (const name of change.delete) {
        const old = vars.get(name)
        if (!old) return { ok: false, reason: 'changed' }
        after.n -= 1
        after.bytes -= old.sealed.byteLength
      }
      const over = storageLimitRefusal(before, after, change.limit)
      if (over) return over
      await this.#db.step()
      const at = change.now.getTime()
      for (const v of change.set) this.#db.putVariable(s, change.vaultId, change.environment, v, change.by, at)
      for (const name of change.delete) {
        this.#db.checkWrite('variables', name)
        vars.delete(name)
      }
      this.#db.putChangeSet(s, { ...change.changeSet, at: change.now })
      this.#db.bumpVersion(s, change.vaultId, change.environment)
      this.#db.appendLog(s, log)
      return { ok: true, value: env.version + 1 }
    })
  }

  listChangeSets<F extends ChangeSetFilter>(vaultId: string, f: F): Promise<ChangeSetList<F>> {
    return this.#db.read('change_sets', (s) => {
      const out: ChangeSetSummary[] = []
      const limit = f.limit === undefined ? Number.POSITIVE_INFINITY : Math.max(0, Math.trunc(f.limit))
      for (let i = s.changeSets.length - 1; i >= 0 && out.length < limit; i--) {
        const c = s.changeSets[i] as ChangeSetRow
        if (c.vaultId !== vaultId) continue
        if (f.environment !== undefined && c.environment !== f.environment) continue
        if (f.ref !== undefined && c.ref !== f.ref) continue
        if (f.id !== undefined && c.id !== f.id) continue
        if (f.beforeSeq !== undefined && c.seq >= f.beforeSeq) continue
        if (f.afterSeq !== undefined && c.seq <= f.afterSeq) continue
        if (f.name !== undefined && !c.entries.some((e) => e.name === f.name)) continue
        if (f.entries !== true) out.push(summary(c))
        else out.push({ ...summary(c), entries: c.entries.filter((e) => f.name === undefined || e.name === f.name).map(copyEntry) } as ChangeSetSummary)
      }
      return out as ChangeSetList<F>
    })
  }

  pruneHistory(olderThan: Date, keep: number): Promise<ChangeResult<never, number>> {
    return this.#db.write('change_sets', (s: State): ChangeResult<never, number> => {
      const cutoff = olderThan.getTime()
      // newest first: count each variable's entries; drop the old ones beyond `keep`
      const seen = new Map<string, number>()
      let removed = 0
      const kept: ChangeSetRow[] = []
      for (let i = s.changeSets.length - 1; i >= 0; i--) {
        const c = s.changeSets[i] as ChangeSetRow
        const entries = c.entries.filter((e) => {
          const k = `${c.vaultId}\0${c.environment}\0${e.name}`
          const n = (seen.get(k) ?? 0) + 1
          seen.set(k, n)
          return c.at >= cutoff || n <= keep
        })
        removed += c.entries.length - entries.length
        if (entries.length === c.entries.length) kept.push(c)
        else if (entries.length > 0) kept.push(Object.freeze({ ...c, entries: Object.freeze(entries) }))
      }
      s.changeSets = kept.reverse()
      return { ok: true, value: removed }
    })
  }
}

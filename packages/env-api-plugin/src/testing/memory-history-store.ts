import type {
  ChangeEntry,
  ChangeSetDetail,
  ChangeSetSummary,
  ChangeVariablesResult,
  HistoryStore,
  VariablesChange,
  VariableVersion,
} from '../adapters/history-store.js'
import type { AccessLogEntry, SealedVariable } from '../adapters/vault-store.js'
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

  readCurrent(vaultId: string, environment: string, names?: readonly string[]): Promise<{ version: number; variables: SealedVariable[] }> {
    return this.#db.read('variables', (s) => {
      const vars = s.variables.get(varKey(vaultId, environment)) ?? new Map()
      const wanted = names === undefined ? [...vars.keys()] : [...new Set(names)].filter((n) => vars.has(n))
      return {
        version: s.environments.get(vaultId)?.get(environment)?.version ?? 0,
        variables: wanted.sort(byKey).map((name) => ({ name, sealed: copyBytes(vars.get(name).sealed) })),
      }
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
      return { ok: true, version: env.version + 1 }
    })
  }

  listChangeSets(vaultId: string, filter: { environment?: string; ref?: string; limit: number; beforeSeq?: number }): Promise<ChangeSetSummary[]> {
    return this.#db.read('change_sets', (s) => {
      const out: ChangeSetSummary[] = []
      const limit = Math.max(0, Math.trunc(filter.limit))
      for (let i = s.changeSets.length - 1; i >= 0 && out.length < limit; i--) {
        const c = s.changeSets[i] as ChangeSetRow
        if (c.vaultId !== vaultId) continue
        if (filter.environment !== undefined && c.environment !== filter.environment) continue
        if (filter.ref !== undefined && c.ref !== filter.ref) continue
        if (filter.beforeSeq !== undefined && c.seq >= filter.beforeSeq) continue
        out.push(summary(c))
      }
      return out
    })
  }

  getChangeSet(vaultId: string, changeSetId: string): Promise<ChangeSetDetail | null> {
    return this.#db.read('change_sets', (s) => {
      const c = s.changeSets.find((r) => r.id === changeSetId && r.vaultId === vaultId)
      return c ? { ...summary(c), entries: c.entries.map(copyEntry) } : null
    })
  }

  listVersions(vaultId: string, environment: string, name: string, filter: { limit: number }): Promise<VariableVersion[]> {
    return this.#db.read('change_sets', (s) => {
      const out: VariableVersion[] = []
      for (let i = s.changeSets.length - 1; i >= 0 && out.length < filter.limit; i--) {
        const c = s.changeSets[i] as ChangeSetRow
        if (c.vaultId !== vaultId || c.environment !== environment) continue
        const e = c.entries.find((x) => x.name === name)
        if (e) out.push({ changeSet: summary(c), entry: copyEntry(e) })
      }
      return out
    })
  }

  firstChangesAfter(vaultId: string, environment: string, afterSeq: number): Promise<{ name: string; changeSetId: string; entry: ChangeEntry }[]> {
    return this.#db.read('change_sets', (s) => {
      const first = new Map<string, { name: string; changeSetId: string; entry: ChangeEntry }>()
      for (const c of s.changeSets) {
        if (c.vaultId !== vaultId || c.environment !== environment || c.seq <= afterSeq) continue
        for (const e of c.entries) if (!first.has(e.name)) first.set(e.name, { name: e.name, changeSetId: c.id, entry: copyEntry(e) })
      }
      return [...first.values()].sort((a, b) => byKey(a.name, b.name))
    })
  }

  pruneHistory(olderThan: Date, keep: number): Promise<number> {
    return this.#db.write('change_sets', (s: State) => {
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
      return removed
    })
  }
}

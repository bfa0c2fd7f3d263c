import type { OverrideChange, OverrideRow, OverrideStore } from '../adapters/override-store.js'
import type { ChangeResult } from '../adapters/results.js'
import type { AccessLogEntry } from '../adapters/vault-store.js'
import { copyBytes, varKey, type MemoryDb } from './memory-state.js'

/** The reference override store (override-store.ts), on the memory state. */
export class MemoryOverrideStore implements OverrideStore {
  readonly #db: MemoryDb

  constructor(db: MemoryDb) {
    this.#db = db
  }

  readOverrides(vaultId: string, environment: string, personId?: string): Promise<{ allowed: boolean; overrides: OverrideRow[] }> {
    return this.#db.read('overrides', (s) => {
      const key = varKey(vaultId, environment)
      const overrides = [...(s.overrides.get(key)?.values() ?? [])]
        .filter((o) => personId === undefined || o.personId === personId)
        .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.personId < b.personId ? -1 : a.personId > b.personId ? 1 : 0))
        .map((o) => ({ ...o, sealed: copyBytes(o.sealed), updatedAt: new Date(o.updatedAt) }))
      return { allowed: s.overridesAllowed.has(key), overrides }
    })
  }

  changeOverride(change: OverrideChange, log: AccessLogEntry): Promise<ChangeResult<'not_found' | 'not_allowed' | 'unchanged'>> {
    return this.#db.write('overrides', async (s): Promise<ChangeResult<'not_found' | 'not_allowed' | 'unchanged'>> => {
      if (!s.environments.get(change.vaultId)?.has(change.environment)) return { ok: false, reason: 'not_found' }
      const key = varKey(change.vaultId, change.environment)
      await this.#db.step()
      if (change.kind === 'allow') {
        if (s.overridesAllowed.has(key) === change.allow) return { ok: false, reason: 'unchanged' }
        if (change.allow) s.overridesAllowed.add(key)
        else {
          s.overridesAllowed.delete(key)
          s.overrides.delete(key)
        }
      } else {
        const rowKey = `${change.name}\0${change.personId}`
        const rows = s.overrides.get(key) ?? new Map<string, OverrideRow>()
        if (change.sealed === null) {
          if (!rows.delete(rowKey)) return { ok: false, reason: 'unchanged' }
        } else {
          if (!s.overridesAllowed.has(key)) return { ok: false, reason: 'not_allowed' }
          rows.set(rowKey, Object.freeze({ name: change.name, personId: change.personId, sealed: copyBytes(change.sealed), updatedAt: change.now }))
        }
        s.overrides.set(key, rows)
      }
      this.#db.appendLog(s, log)
      return { ok: true, value: undefined }
    })
  }
}

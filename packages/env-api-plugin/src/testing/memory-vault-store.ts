import type {
  AccessLogEntry,
  AccessLogRow,
  AuditRow,
  CreateEnvironmentResult,
  EnvironmentInfo,
  MemberChange,
  NewEnvironment,
  NewVault,
  RemoveMemberResult,
  Role,
  SetMemberResult,
  VaultAccess,
  VaultInfo,
  VaultRecord,
  VaultSecrets,
  VaultStore,
} from '../adapters/vault-store.js'
import type { ImportStore } from '../adapters/import-store.js'
import type { ChangeResult } from '../adapters/results.js'
import { StorageError } from '../errors.js'
import { memberChangeEntry } from '../domain/storage-rules.js'
import { copyBytes, varKey, type MemoryDb, type State, type VaultRow } from './memory-state.js'

const byKey = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)

function record(v: VaultRow): VaultRecord {
  return { id: v.id, name: v.name, plan: v.plan, requireSecondPerson: v.requireSecondPerson, createdAt: new Date(v.createdAt) }
}

function environmentsOf(s: State, vaultId: string): EnvironmentInfo[] {
  return [...(s.environments.get(vaultId) ?? new Map()).entries()]
    .sort(([a], [b]) => byKey(a, b))
    .map(([name, e]) => ({ name, ownersOnly: e.ownersOnly, secondPerson: e.secondPerson }))
}

function info(s: State, v: VaultRow): VaultInfo {
  return { ...record(v), environments: environmentsOf(s, v.id) }
}

function access(s: State, personId: string, filter: (v: VaultRow) => boolean): VaultAccess[] {
  const out: VaultAccess[] = []
  for (const v of s.vaults.values()) {
    const role = s.members.get(v.id)?.get(personId)
    if (role && filter(v)) out.push({ ...info(s, v), role })
  }
  return out.sort((a, b) => byKey(a.name, b.name) || byKey(a.id, b.id))
}

/** Usage of a vault: variables plus staged values of pending pushes. */
export function usage(s: State, vaultId: string): { n: number; bytes: number } {
  let n = 0
  let bytes = 0
  for (const [key, vars] of s.variables) {
    if (!key.startsWith(`${vaultId}\0`)) continue
    for (const v of vars.values()) {
      n++
      bytes += v.sealed.byteLength
    }
  }
  for (const imp of s.imports.values()) {
    if (imp.vaultId !== vaultId || imp.status !== 'pending') continue
    for (const sealed of s.importValues.get(imp.id)?.values() ?? []) {
      n++
      bytes += sealed.byteLength
    }
  }
  return { n, bytes }
}

export const sameBytes = (a: Uint8Array | null, b: Uint8Array): boolean => a !== null && Buffer.from(a).equals(Buffer.from(b))

/**
 * The reference vault store: every method is what the contract says and no
 * more, on plain maps (see memory-state.ts for its transactions). Written
 * to be read: a new backend can follow it method by method.
 */
export class MemoryVaultStore implements Omit<VaultStore, keyof ImportStore> {
  readonly #db: MemoryDb

  constructor(db: MemoryDb) {
    this.#db = db
  }

  // ---- helpers that run inside a transaction ---------------------------------

  #requireVault(s: State, vaultId: string, table: string): VaultRow {
    const v = s.vaults.get(vaultId)
    if (!v) throw new StorageError('23503', table)
    return v
  }

  // ---- vaults and keys ----------------------------------------------------------

  createVault(input: NewVault, log: AccessLogEntry): Promise<VaultRecord> {
    return this.#db.write('vaults', async (s) => {
      if (s.vaults.has(input.id)) throw new StorageError('23505', 'vaults_pk')
      const row: VaultRow = Object.freeze({
        id: input.id,
        name: input.name,
        plan: input.plan,
        requireSecondPerson: false,
        createdAt: input.now.getTime(),
        wrappedKey: null,
      })
      s.vaults.set(input.id, row)
      s.members.set(input.id, new Map([[input.ownerId, 'owner']]))
      const envs = new Map()
      for (const e of input.environments) {
        if (envs.has(e.name)) throw new StorageError('23505', 'environments_pk')
        envs.set(e.name, Object.freeze({ ownersOnly: e.ownersOnly, secondPerson: e.secondPerson ?? e.ownersOnly, version: 0, createdAt: input.now.getTime() }))
      }
      s.environments.set(input.id, envs)
      await this.#db.step()
      this.#db.appendLog(s, log)
      return record(row)
    })
  }

  getWrappedKey(vaultId: string): Promise<Uint8Array | null> {
    return this.#db.read('vaults', (s) => {
      const k = s.vaults.get(vaultId)?.wrappedKey
      return k ? copyBytes(k) : null
    })
  }

  ensureWrappedKey(vaultId: string, wrap: () => Promise<Uint8Array>): Promise<Uint8Array> {
    return this.#db.write('vaults', async (s) => {
      const v = this.#requireVault(s, vaultId, 'vaults')
      if (v.wrappedKey) return copyBytes(v.wrappedKey)
      const wrapped = copyBytes(await wrap()) // inside the transaction: no rotation commits meanwhile
      s.vaults.set(vaultId, Object.freeze({ ...v, wrappedKey: wrapped }))
      return copyBytes(wrapped)
    })
  }

  rewrapKeys(rewrap: (wrapped: Uint8Array, vaultId: string) => Promise<Uint8Array>): Promise<number> {
    return this.#db.write('vaults', async (s) => {
      let n = 0
      for (const v of [...s.vaults.values()].sort((a, b) => byKey(a.id, b.id))) {
        if (!v.wrappedKey) continue
        const next = await rewrap(copyBytes(v.wrappedKey), v.id)
        s.vaults.set(v.id, Object.freeze({ ...v, wrappedKey: copyBytes(next) }))
        n++
      }
      return n
    })
  }

  resealVault(vaultId: string, reseal: (current: VaultSecrets) => Promise<VaultSecrets>): Promise<boolean> {
    return this.#db.write('vaults', async (s) => {
      const v = s.vaults.get(vaultId)
      if (!v?.wrappedKey) return false
      const variables: { environment: string; name: string; sealed: Uint8Array }[] = []
      for (const env of s.environments.get(vaultId)?.keys() ?? []) {
        for (const [name, row] of s.variables.get(varKey(vaultId, env)) ?? []) variables.push({ environment: env, name, sealed: copyBytes(row.sealed) })
      }
      const staged: { importId: string; environment: string; name: string; sealed: Uint8Array }[] = []
      for (const imp of s.imports.values()) {
        if (imp.vaultId !== vaultId || imp.status !== 'pending') continue
        for (const [name, sealed] of s.importValues.get(imp.id) ?? [])
          staged.push({ importId: imp.id, environment: imp.environment, name, sealed: copyBytes(sealed) })
      }
      const history: VaultSecrets['history'][number][] = []
      for (const c of s.changeSets) {
        if (c.vaultId !== vaultId) continue
        for (const e of c.entries) {
          if (e.before) history.push({ changeSetId: c.id, environment: c.environment, name: e.name, side: 'before', sealed: copyBytes(e.before) })
          if (e.after) history.push({ changeSetId: c.id, environment: c.environment, name: e.name, side: 'after', sealed: copyBytes(e.after) })
        }
      }
      const webhooks = [...s.webhooks.values()]
        .filter((w) => w.vaultId === vaultId && w.sealedSecret !== null)
        .map((w) => ({ webhookId: w.id, sealed: copyBytes(w.sealedSecret as Uint8Array) }))
      const overrides: { environment: string; name: string; personId: string; sealed: Uint8Array }[] = []
      for (const env of s.environments.get(vaultId)?.keys() ?? [])
        for (const o of s.overrides.get(varKey(vaultId, env))?.values() ?? [])
          overrides.push({ environment: env, name: o.name, personId: o.personId, sealed: copyBytes(o.sealed) })
      const next = await reseal({ wrappedKey: copyBytes(v.wrappedKey), variables, staged, history, webhooks, overrides })
      for (const n of next.overrides ?? []) {
        const rows = s.overrides.get(varKey(vaultId, n.environment))
        const row = rows?.get(`${n.name}\0${n.personId}`)
        if (!rows || !row) throw new StorageError('23503', 'overrides')
        rows.set(`${n.name}\0${n.personId}`, Object.freeze({ ...row, sealed: copyBytes(n.sealed) }))
      }
      for (const n of next.webhooks ?? []) {
        const w = s.webhooks.get(n.webhookId)
        if (!w || w.vaultId !== vaultId || w.sealedSecret === null) throw new StorageError('23503', 'webhooks')
        s.webhooks.set(w.id, Object.freeze({ ...w, sealedSecret: copyBytes(n.sealed) }))
      }
      s.vaults.set(vaultId, Object.freeze({ ...v, wrappedKey: copyBytes(next.wrappedKey) }))
      for (const n of next.variables) {
        const vars = s.variables.get(varKey(vaultId, n.environment))
        const row = vars?.get(n.name)
        if (!vars || !row) throw new StorageError('23503', 'variables')
        vars.set(n.name, Object.freeze({ ...row, sealed: copyBytes(n.sealed) }))
      }
      for (const n of next.staged) {
        const values = s.importValues.get(n.importId)
        if (!values?.has(n.name)) throw new StorageError('23503', 'import_values')
        values.set(n.name, copyBytes(n.sealed))
      }
      for (const n of next.history) {
        const i = s.changeSets.findIndex((c) => c.vaultId === vaultId && c.id === n.changeSetId)
        const c = s.changeSets[i]
        const e = c?.entries.find((x) => x.name === n.name && x[n.side] !== null)
        if (!c || !e) throw new StorageError('23503', 'change_entries')
        const entries = c.entries.map((x) => (x === e ? Object.freeze({ ...x, [n.side]: copyBytes(n.sealed) }) : x))
        s.changeSets[i] = Object.freeze({ ...c, entries: Object.freeze(entries) })
      }
      for (const env of s.environments.get(vaultId)?.keys() ?? []) this.#db.bumpVersion(s, vaultId, env)
      return true
    })
  }

  listVaults(personId: string): Promise<VaultAccess[]> {
    return this.#db.read('vaults', (s) => access(s, personId, () => true))
  }

  getVault(vaultId: string, personId: string): Promise<VaultAccess | null> {
    return this.#db.read('vaults', (s) => access(s, personId, (v) => v.id === vaultId)[0] ?? null)
  }

  findVaults(filter: { readonly id: string } | { readonly name: string } | Record<string, never>): Promise<VaultInfo[]> {
    return this.#db.read('vaults', (s) =>
      [...s.vaults.values()]
        .filter((v) => ('id' in filter ? v.id === filter.id : 'name' in filter ? v.name === filter.name : true))
        .sort((a, b) => byKey(a.id, b.id))
        .map((v) => info(s, v)),
    )
  }

  renameVault(input: { readonly vaultId: string; readonly name: string }, log: AccessLogEntry): Promise<boolean> {
    return this.#db.write('vaults', async (s) => {
      const v = s.vaults.get(input.vaultId)
      if (!v) return false
      await this.#db.step()
      s.vaults.set(v.id, Object.freeze({ ...v, name: input.name }))
      this.#db.appendLog(s, log)
      return true
    })
  }

  deleteVault(input: { readonly vaultId: string; readonly by: string | null; readonly at: Date }): Promise<boolean> {
    return this.#db.write('vaults', async (s) => {
      const v = s.vaults.get(input.vaultId)
      if (!v) return false
      await this.#db.step()
      s.vaults.delete(v.id)
      s.members.delete(v.id)
      for (const env of s.environments.get(v.id)?.keys() ?? []) {
        s.variables.delete(varKey(v.id, env))
        s.overrides.delete(varKey(v.id, env))
        s.overridesAllowed.delete(varKey(v.id, env))
      }
      s.environments.delete(v.id)
      for (const imp of [...s.imports.values()]) {
        if (imp.vaultId !== v.id) continue
        s.imports.delete(imp.id)
        s.importValues.delete(imp.id)
      }
      s.accessLog = s.accessLog.filter((r) => r.vaultId !== v.id)
      s.changeSets = s.changeSets.filter((c) => c.vaultId !== v.id)
      for (const [id, c] of [...s.ciIdentities]) if (c.vaultId === v.id) s.ciIdentities.delete(id)
      for (const [id, w] of [...s.webhooks]) {
        if (w.vaultId !== v.id) continue
        s.webhooks.delete(id)
        for (const [d, row] of [...s.deliveries]) if (row.webhookId === id) s.deliveries.delete(d)
      }
      s.audit.push(Object.freeze({ id: s.audit.length + 1, at: input.at, personId: input.by, action: 'vault_deleted', vaultId: v.id, vaultName: v.name }))
      return true
    })
  }

  listAudit(filter: { readonly limit: number }): Promise<AuditRow[]> {
    return this.#db.read('audit', (s) => [...s.audit].reverse().slice(0, Math.max(0, Math.trunc(filter.limit))))
  }

  setEnvironmentRules(
    input: { readonly vaultId: string; readonly name: string; readonly ownersOnly?: boolean; readonly secondPerson?: boolean },
    log: AccessLogEntry,
  ): Promise<boolean> {
    return this.#db.write('environments', async (s) => {
      const envs = s.environments.get(input.vaultId)
      const e = envs?.get(input.name)
      if (!envs || !e) return false
      await this.#db.step()
      envs.set(input.name, Object.freeze({ ...e, ownersOnly: input.ownersOnly ?? e.ownersOnly, secondPerson: input.secondPerson ?? e.secondPerson }))
      this.#db.appendLog(s, log)
      return true
    })
  }

  // ---- environments and members -----------------------------------------------

  createEnvironment(input: NewEnvironment, log: AccessLogEntry): Promise<CreateEnvironmentResult> {
    return this.#db.write('environments', async (s): Promise<CreateEnvironmentResult> => {
      this.#requireVault(s, input.vaultId, 'environments')
      const envs = s.environments.get(input.vaultId) ?? new Map()
      if (envs.has(input.name)) return { ok: false, reason: 'exists' }
      await this.#db.step()
      envs.set(
        input.name,
        Object.freeze({ ownersOnly: input.ownersOnly, secondPerson: input.secondPerson ?? input.ownersOnly, version: 0, createdAt: input.now.getTime() }),
      )
      s.environments.set(input.vaultId, envs)
      this.#db.appendLog(s, log)
      return { ok: true }
    })
  }

  setMember(change: MemberChange, log: AccessLogEntry): Promise<SetMemberResult> {
    return this.#db.write('members', async (s): Promise<SetMemberResult> => {
      this.#requireVault(s, change.vaultId, 'members')
      const members = s.members.get(change.vaultId) ?? new Map<string, Role>()
      const previous = members.get(change.personId) ?? null
      const expect = change.expect ?? 'any'
      if (expect === 'new' && previous !== null) return { ok: false, reason: 'already_member' }
      if (expect === 'existing' && previous === null) return { ok: false, reason: 'not_member' }
      if (previous === change.role) return { ok: true, previous }
      await this.#db.step() // a networked database would answer the count in another round trip
      const owners = [...members.values()].filter((r) => r === 'owner').length
      if (previous === 'owner' && owners <= 1) return { ok: false, reason: 'last_owner' }
      await this.#db.step()
      members.set(change.personId, change.role)
      s.members.set(change.vaultId, members)
      this.#db.appendLog(s, memberChangeEntry(log, previous))
      return { ok: true, previous }
    })
  }

  removeMember(input: { readonly vaultId: string; readonly personId: string }, log: AccessLogEntry): Promise<RemoveMemberResult> {
    return this.#db.write('members', async (s): Promise<RemoveMemberResult> => {
      const members = s.members.get(input.vaultId)
      const previous = members?.get(input.personId)
      if (!members || !previous) return { ok: false, reason: 'not_member' }
      await this.#db.step()
      const owners = [...members.values()].filter((r) => r === 'owner').length
      if (previous === 'owner' && owners <= 1) return { ok: false, reason: 'last_owner' }
      await this.#db.step()
      members.delete(input.personId)
      this.#db.appendLog(s, log)
      return { ok: true, previous }
    })
  }

  listMembers(vaultId: string): Promise<{ personId: string; role: Role }[]> {
    return this.#db.read('members', (s) =>
      [...(s.members.get(vaultId) ?? new Map<string, Role>()).entries()].sort(([a], [b]) => byKey(a, b)).map(([personId, role]) => ({ personId, role })),
    )
  }

  // ---- access log -------------------------------------------------------------

  appendAccessLog(entry: AccessLogEntry): Promise<ChangeResult<never>> {
    return this.#db.write('access_log', (s) => {
      this.#db.appendLog(s, entry)
      return { ok: true, value: undefined }
    })
  }

  listAccessLog(vaultId: string, filter: { environment?: string; action?: AccessLogEntry['action']; limit: number; before?: number }): Promise<AccessLogRow[]> {
    return this.#db.read('access_log', (s) => {
      const limit = Math.max(0, Math.trunc(filter.limit))
      const out: AccessLogRow[] = []
      for (let i = s.accessLog.length - 1; i >= 0 && out.length < limit; i--) {
        const r = s.accessLog[i] as AccessLogRow
        if (r.vaultId !== vaultId) continue
        if (filter.environment !== undefined && r.environment !== filter.environment) continue
        if (filter.action !== undefined && r.action !== filter.action) continue
        if (filter.before !== undefined && r.id >= filter.before) continue
        out.push({ ...r, names: [...r.names] })
      }
      return out
    })
  }
}

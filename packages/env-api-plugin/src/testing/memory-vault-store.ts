import type {
  AccessLogEntry,
  AccessLogRow,
  AuditRow,
  EnvironmentInfo,
  KeySwap,
  MemberChange,
  MemberChangeResult,
  NewVault,
  Role,
  VaultChange,
  VaultAccess,
  VaultInfo,
  VaultRecord,
  VaultSecrets,
  VaultStore,
} from '../adapters/vault-store.js'
import type { ChangeResult } from '../adapters/results.js'
import { StorageError } from '../errors.js'
import { memberChangeEntry, sameSecrets } from '../domain/storage-rules.js'
import { copyBytes, varKey, type MemoryDb, type State, type VaultRow, webhooksOf } from './memory-state.js'

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

/** Every secret of a vault as stored now (readVaultSecrets); null without a key. */
function secretsOf(s: State, vaultId: string): VaultSecrets | null {
  const v = s.vaults.get(vaultId)
  if (!v?.wrappedKey) return null
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
  const webhooks = webhooksOf(s, vaultId)
    .filter((w) => w.sealedSecret !== null)
    .map((w) => ({ webhookId: w.id, sealed: copyBytes(w.sealedSecret as Uint8Array) }))
  const overrides: { environment: string; name: string; personId: string; sealed: Uint8Array }[] = []
  for (const env of s.environments.get(vaultId)?.keys() ?? [])
    for (const o of s.overrides.get(varKey(vaultId, env))?.values() ?? [])
      overrides.push({ environment: env, name: o.name, personId: o.personId, sealed: copyBytes(o.sealed) })
  return { wrappedKey: copyBytes(v.wrappedKey), variables, staged, history, webhooks, overrides }
}

/** Writes a reseal's rows (each must exist: else 23503, and the transaction rolls back). */
function writeSecrets(s: State, vaultId: string, next: VaultSecrets): void {
  const v = s.vaults.get(vaultId) as VaultRow
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
}

/**
 * The reference vault store: every method is what the contract says and no
 * more, on plain maps (see memory-state.ts for its transactions). Written
 * to be read: a new backend can follow it method by method.
 */
export class MemoryVaultStore implements VaultStore {
  readonly #db: MemoryDb

  constructor(db: MemoryDb) {
    this.#db = db
  }

  // ---- vaults and keys ----------------------------------------------------------

  createVault(input: NewVault, log: AccessLogEntry): Promise<ChangeResult<never, VaultRecord>> {
    return this.#db.write('vaults', async (s): Promise<ChangeResult<never, VaultRecord>> => {
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
      return { ok: true, value: record(row) }
    })
  }

  getWrappedKey(vaultId: string): Promise<Uint8Array | null> {
    return this.#db.read('vaults', (s) => {
      const k = s.vaults.get(vaultId)?.wrappedKey
      return k ? copyBytes(k) : null
    })
  }

  readVaultSecrets(vaultId: string): Promise<VaultSecrets | null> {
    return this.#db.read('vaults', (s) => secretsOf(s, vaultId))
  }

  swapWrappedKey(swap: KeySwap): Promise<ChangeResult<'changed' | 'not_found'>> {
    return this.#db.write('vaults', async (s): Promise<ChangeResult<'changed' | 'not_found'>> => {
      const v = s.vaults.get(swap.vaultId)
      if (!v) return { ok: false, reason: 'not_found' }
      if (swap.kind === 'key') {
        if (v.wrappedKey === null ? swap.expect !== null : !sameBytes(swap.expect, v.wrappedKey)) return { ok: false, reason: 'changed' }
        await this.#db.step()
        s.vaults.set(v.id, Object.freeze({ ...v, wrappedKey: copyBytes(swap.next) }))
        return { ok: true, value: undefined }
      }
      const current = secretsOf(s, swap.vaultId)
      if (!current || !sameSecrets(current, swap.expect)) return { ok: false, reason: 'changed' }
      await this.#db.step()
      writeSecrets(s, swap.vaultId, swap.next)
      for (const env of s.environments.get(swap.vaultId)?.keys() ?? []) this.#db.bumpVersion(s, swap.vaultId, env)
      return { ok: true, value: undefined }
    })
  }

  listVaults(personId: string, filter: { readonly vaultId?: string } = {}): Promise<VaultAccess[]> {
    return this.#db.read('vaults', (s) => access(s, personId, (v) => filter.vaultId === undefined || v.id === filter.vaultId))
  }

  findVaults(filter: { readonly id: string } | { readonly name: string } | Record<string, never>): Promise<VaultInfo[]> {
    return this.#db.read('vaults', (s) =>
      [...s.vaults.values()]
        .filter((v) => ('id' in filter ? v.id === filter.id : 'name' in filter ? v.name === filter.name : true))
        .sort((a, b) => byKey(a.id, b.id))
        .map((v) => info(s, v)),
    )
  }

  changeVault(change: VaultChange, log: AccessLogEntry): Promise<ChangeResult<'not_found' | 'exists'>> {
    return this.#db.write('vaults', async (s): Promise<ChangeResult<'not_found' | 'exists'>> => {
      const v = s.vaults.get(change.vaultId)
      if (!v) return { ok: false, reason: 'not_found' }
      const envs = s.environments.get(v.id) ?? new Map()
      if (change.kind === 'rename') {
        await this.#db.step()
        s.vaults.set(v.id, Object.freeze({ ...v, name: change.name }))
      } else if (change.kind === 'environment_rules') {
        const e = envs.get(change.environment)
        if (!e) return { ok: false, reason: 'not_found' }
        await this.#db.step()
        envs.set(
          change.environment,
          Object.freeze({ ...e, ownersOnly: change.ownersOnly ?? e.ownersOnly, secondPerson: change.secondPerson ?? e.secondPerson }),
        )
      } else {
        if (envs.has(change.name)) return { ok: false, reason: 'exists' }
        await this.#db.step()
        const at = change.now.getTime()
        envs.set(
          change.name,
          Object.freeze({ ownersOnly: change.ownersOnly, secondPerson: change.secondPerson ?? change.ownersOnly, version: 0, createdAt: at }),
        )
        s.environments.set(v.id, envs)
      }
      this.#db.appendLog(s, log)
      return { ok: true, value: undefined }
    })
  }

  deleteVault(input: { readonly vaultId: string; readonly by: string | null; readonly at: Date }): Promise<ChangeResult<'not_found'>> {
    return this.#db.write('vaults', async (s): Promise<ChangeResult<'not_found'>> => {
      const v = s.vaults.get(input.vaultId)
      if (!v) return { ok: false, reason: 'not_found' }
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
      return { ok: true, value: undefined }
    })
  }

  listAudit(filter: { readonly limit: number }): Promise<AuditRow[]> {
    return this.#db.read('audit', (s) => [...s.audit].reverse().slice(0, Math.max(0, Math.trunc(filter.limit))))
  }

  // ---- members ------------------------------------------------------------------

  changeMember(change: MemberChange, log: AccessLogEntry): Promise<MemberChangeResult> {
    return this.#db.write('members', async (s): Promise<MemberChangeResult> => {
      const members = s.members.get(change.vaultId)
      const previous = members?.get(change.personId) ?? null
      if (change.kind === 'remove') {
        if (!members || previous === null) return { ok: false, reason: 'not_member' }
      } else {
        if (!s.vaults.has(change.vaultId)) return { ok: false, reason: 'not_found' }
        const expect = change.expect ?? 'any'
        if (expect === 'new' && previous !== null) return { ok: false, reason: 'already_member' }
        if (expect === 'existing' && previous === null) return { ok: false, reason: 'not_member' }
        if (previous === change.role) return { ok: true, value: previous }
      }
      await this.#db.step() // a networked database would answer the count in another round trip
      const owners = [...(members?.values() ?? [])].filter((r) => r === 'owner').length
      if (previous === 'owner' && owners <= 1) return { ok: false, reason: 'last_owner' }
      await this.#db.step()
      const next = members ?? new Map<string, Role>()
      if (change.kind === 'remove') {
        next.delete(change.personId)
        this.#db.appendLog(s, log)
      } else {
        next.set(change.personId, change.role)
        this.#db.appendLog(s, memberChangeEntry(log, previous))
      }
      s.members.set(change.vaultId, next)
      return { ok: true, value: previous }
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

import type { ImportRecord, NewImport } from '../adapters/import-store.js'
import type { AccessLogEntry, OverLimit, Role, SealedVariable, StorageLimit, VaultSecrets } from '../adapters/vault-store.js'

/**
 * The rules a storage backend applies inside its own transactions, written
 * once as pure functions: every backend (memory, SQLite, PostgreSQL, and
 * the next one) calls these instead of keeping a copy. Storage reads and
 * writes; what the figures mean is decided here.
 */

/** A vault's usage for the storage limit: values stored, and their sealed bytes. */
export interface Usage {
  readonly n: number
  readonly bytes: number
}

/**
 * The storage-limit refusal of a change that takes a vault's usage from
 * `before` to `after`, or null when it is allowed: refused when a figure
 * would be over its maximum and larger than before (a vault over a limit
 * that shrank may still shrink).
 */
export function storageLimitRefusal(before: Usage, after: Usage, limit: StorageLimit): OverLimit | null {
  if (after.n > limit.maxVariables && after.n > before.n)
    return { ok: false, reason: 'storage_limit', limit: 'variables', usage: after.n, max: limit.maxVariables }
  if (after.bytes > limit.maxBytes && after.bytes > before.bytes)
    return { ok: false, reason: 'storage_limit', limit: 'bytes', usage: after.bytes, max: limit.maxBytes }
  return null
}

const byBytes = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)

/** A new push as a backend stores it: see `plannedPush`. */
export interface PlannedPush {
  /** the staged values, in name order */
  readonly values: SealedVariable[]
  /** their names, in order */
  readonly valued: string[]
  /** the names it deletes when applied, in order */
  readonly deletes: string[]
  /** every name it concerns (`valued` and `deletes`), in order: the push's `names` */
  readonly names: string[]
  /** the storage-limit refusal of staging it, or null */
  readonly over: OverLimit | null
}

/**
 * What a backend stores for a new push, given the vault's usage before it
 * (its staged values count toward the limit until decided): the values and
 * names in byte order, and whether the plan's limit refuses it.
 */
export function plannedPush(input: Pick<NewImport, 'values' | 'deletes' | 'limit'>, before: Usage): PlannedPush {
  const values = [...input.values].sort((a, b) => byBytes(a.name, b.name))
  const valued = values.map((v) => v.name)
  const deletes = [...(input.deletes ?? [])].sort(byBytes)
  const added = values.reduce((n, v) => n + v.sealed.byteLength, 0)
  const over = storageLimitRefusal(before, { n: before.n + values.length, bytes: before.bytes + added }, input.limit)
  // `valued` is in order already: sorted again only with deletes to merge in
  return { values, valued, deletes, names: deletes.length === 0 ? [...valued] : [...valued, ...deletes].sort(byBytes), over }
}

/** The names of a push that will replace a value the environment has now, in the push's order. */
export function overwritesOf(names: readonly string[], current: { has(name: string): boolean }): string[] {
  return names.filter((n) => current.has(n))
}

/**
 * The entry a member change writes: `member_added` when the person was not a
 * member (`previous` null), `member_changed` otherwise, whatever the caller's
 * entry said.
 */
export function memberChangeEntry(log: AccessLogEntry, previous: Role | null): AccessLogEntry {
  return { ...log, action: previous === null ? 'member_added' : 'member_changed' }
}

/**
 * True when a push is pending and its time has come (`now >= expiresAt`):
 * every backend moves it to `expired` (with `expiredPush` and
 * `pushExpiredEntry`) before a read answers it or a decision touches it.
 */
export function pushHasExpired(push: Pick<ImportRecord, 'status' | 'expiresAt'>, now: Date): boolean {
  return push.status === 'pending' && now.getTime() >= push.expiresAt.getTime()
}

/** A push as it is once expired: decided at its expiry, by nobody, for no stated reason. */
export function expiredPush(push: ImportRecord): ImportRecord {
  return { ...push, status: 'expired', decidedAt: push.expiresAt, decidedBy: null, reason: null }
}

/**
 * The access-log entry of a push that expired: by nobody, at its expiry,
 * with its names. Every backend writes exactly this when it moves a
 * pending push to `expired` (getImport, decideImport, expireImports).
 */
export function pushExpiredEntry(push: Pick<ImportRecord, 'vaultId' | 'expiresAt' | 'environment' | 'names'>): AccessLogEntry {
  return {
    vaultId: push.vaultId,
    at: push.expiresAt,
    personId: null,
    signInId: null,
    clientId: null,
    action: 'push_expired',
    environment: push.environment,
    names: push.names,
    address: null,
    subject: null,
    detail: null,
  }
}

/** Each sealed row of a vault's secrets, keyed by what it is, with its bytes as hex (for `sameSecrets`). */
function secretRows(s: VaultSecrets): Map<string, string> {
  const out = new Map<string, string>()
  const hex = (u: Uint8Array) => Buffer.from(u.buffer, u.byteOffset, u.byteLength).toString('hex')
  out.set('key', hex(s.wrappedKey))
  for (const v of s.variables) out.set(JSON.stringify(['v', v.environment, v.name]), hex(v.sealed))
  for (const v of s.staged) out.set(JSON.stringify(['s', v.importId, v.name]), hex(v.sealed))
  for (const h of s.history) out.set(JSON.stringify(['h', h.changeSetId, h.name, h.side]), hex(h.sealed))
  for (const w of s.webhooks ?? []) out.set(JSON.stringify(['w', w.webhookId]), hex(w.sealed))
  for (const o of s.overrides ?? []) out.set(JSON.stringify(['o', o.environment, o.name, o.personId]), hex(o.sealed))
  return out
}

/**
 * Whether two reads of a vault's secrets are the same (same key, same rows,
 * same bytes, in any order): a reseal (`swapWrappedKey`) is written only
 * when the secrets in storage are still exactly those it sealed again.
 */
export function sameSecrets(a: VaultSecrets, b: VaultSecrets): boolean {
  const x = secretRows(a)
  const y = secretRows(b)
  if (x.size !== y.size) return false
  for (const [k, v] of x) if (y.get(k) !== v) return false
  return true
}

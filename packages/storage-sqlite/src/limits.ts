import type { OverLimit, StorageLimit } from '@envkeep/env-api-plugin'
import type { Statement } from 'better-sqlite3'
import type { OpenDatabase } from './database.js'

const cache = new WeakMap<object, Map<string, Statement>>()

/** A statement prepared once per connection. */
export function prepared(d: OpenDatabase, text: string): Statement {
  let m = cache.get(d.sqlite)
  if (!m) {
    m = new Map()
    cache.set(d.sqlite, m)
  }
  let s = m.get(text)
  if (!s) {
    s = d.sqlite.prepare(text)
    m.set(text, s)
  }
  return s
}

const USAGE_SQL = `select
  (select count(*) from variables where vault_id = ?) + (select count(*) from import_values iv join imports i on i.id = iv.import_id where i.vault_id = ? and i.status = 'pending') as n,
  (select coalesce(sum(length(sealed)), 0) from variables where vault_id = ?) + (select coalesce(sum(length(iv.sealed)), 0) from import_values iv join imports i on i.id = iv.import_id where i.vault_id = ? and i.status = 'pending') as bytes`

/** A vault's usage (StorageLimit): its variables plus the staged values of its pending pushes. Inside the caller's transaction. */
export function usageOf(d: OpenDatabase, vaultId: string): { n: number; bytes: number } {
  return prepared(d, USAGE_SQL).get(vaultId, vaultId, vaultId, vaultId) as { n: number; bytes: number }
}

/**
 * The storage-limit refusal for a change taking usage from `before` to
 * `after`, or null when it is allowed: refused when a figure would be over
 * its maximum and larger than before (a vault over a limit that shrank may shrink).
 */
export function overLimit(before: { n: number; bytes: number }, after: { n: number; bytes: number }, limit: StorageLimit): OverLimit | null {
  if (after.n > limit.maxVariables && after.n > before.n)
    return { ok: false, reason: 'storage_limit', limit: 'variables', usage: after.n, max: limit.maxVariables }
  if (after.bytes > limit.maxBytes && after.bytes > before.bytes)
    return { ok: false, reason: 'storage_limit', limit: 'bytes', usage: after.bytes, max: limit.maxBytes }
  return null
}

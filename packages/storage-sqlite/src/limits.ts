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

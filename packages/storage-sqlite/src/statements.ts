import type { Statement } from 'better-sqlite3'
import type { OpenDatabase } from './database.js'

const cache = new WeakMap<object, Map<string, Statement>>()

/** Statements kept per connection; past this many the cache starts over (a list of names makes a new text per length). */
const MOST_STATEMENTS = 512

/** A statement prepared once per connection. */
export function prepared(d: OpenDatabase, text: string): Statement {
  let m = cache.get(d.sqlite)
  if (!m) {
    m = new Map()
    cache.set(d.sqlite, m)
  }
  let s = m.get(text)
  if (!s) {
    if (m.size >= MOST_STATEMENTS) m.clear()
    s = d.sqlite.prepare(text)
    m.set(text, s)
  }
  return s
}

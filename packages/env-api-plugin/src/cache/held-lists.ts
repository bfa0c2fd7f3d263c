import type { VaultAccess } from '../adapters/vault-store.js'

/**
 * What a surface derives from a person's whole vault list (the API's answer
 * to GET /api/env/vaults, serialized), made once per list the core's cache
 * holds (cached-storage.ts) instead of once per request: a 1,000-vault list
 * built and serialized each time allocated ~1.3 MB a request, which with
 * ten lists in flight was promoted to the old generation at 8 MB
 * semi-spaces (bench/README.md, "memory4").
 *
 * The cache hands out copies of the list it holds; each copy is tied here
 * to the held list, and what is derived hangs off the held list, so it goes
 * with it: a change empties the cache, the next request loads a new list and
 * derives again (a held list is never changed in place, so what was derived
 * from it stays true of it). A list the cache did not hand out (a storage
 * without `watchChanges`, a CI identity's vault) is derived every time.
 */
const heldOf = new WeakMap<readonly VaultAccess[], readonly VaultAccess[]>()
const derivedOf = new WeakMap<readonly VaultAccess[], Map<object, unknown>>()

/** Ties `copy` (what the cache answers) to `held` (what it keeps, never changed in place); returns `copy`. */
export function handOut(held: readonly VaultAccess[], copy: VaultAccess[]): VaultAccess[] {
  heldOf.set(copy, held)
  return copy
}

/** `derive(list)`, made once per held list and `key`; made every time for a list the cache did not hand out. */
export function derivedFromList<T>(list: readonly VaultAccess[], key: object, derive: (list: readonly VaultAccess[]) => T): T {
  const held = heldOf.get(list)
  if (held === undefined) return derive(list)
  let derived = derivedOf.get(held)
  if (derived === undefined) {
    derived = new Map()
    derivedOf.set(held, derived)
  } else if (derived.has(key)) return derived.get(key) as T
  const v = derive(list)
  derived.set(key, v)
  return v
}

import { LRUCache } from 'lru-cache'
import type { AccessGrant, FoundToken } from '../adapters/oauth-store.js'
import type { CiIdentityRecord } from '../adapters/ci-identity-store.js'
import type { OverrideRow } from '../adapters/override-store.js'
import type { Storage } from '../adapters/storage.js'
import type { CurrentOptions, CurrentState } from '../adapters/history-store.js'
import type { VaultAccess, VaultInfo } from '../adapters/vault-store.js'
import { onChanges } from './change-kinds.js'
import { handOut } from './held-lists.js'

/**
 * The core's caches (issue 20): what every request reads, kept once per core
 * and emptied whole on every change.
 *
 * - sign-ins by access token hash (`findToken(hash, 'access')`, every request's lookup);
 * - a person's vault access: role, environments and their rules
 *   (`listVaults(person, {vaultId})`, and the person's whole list), a vault by id (`findVaults({id})`) and a CI identity by id
 *   (`findCiIdentities({id})`), which the domain's locate reads;
 * - an environment's sealed rows with its version (`readCurrent`) and a
 *   person's sealed overrides (`readOverrides`): sealed bytes only, opened
 *   per request; no value in plaintext outlives its request.
 *
 * Never outliving a change: every storage method that may change what they
 * hold (change-kinds.ts) empties them all before its promise resolves to
 * its caller (a change made through this core is seen by the very next
 * request), and so does the storage's `watchChanges` signal (a change made
 * by another process, or another core: within a second). A load that was
 * under way while a change happened is not kept (`generation`). A storage
 * without `watchChanges` gets no caching: another process's changes could
 * not be seen.
 *
 * What is time-limited is still checked at use: a cached sign-in past its
 * token's or its own end, or revoked, is refused; one that may be idle is
 * asked of storage again; and it is asked again at least every
 * SIGN_IN_RECHECK_MS anyway, so storage keeps recording its last use.
 */
export interface CoreCache {
  /** the storage every surface of the core uses: cached reads, invalidating writes */
  readonly storage: Storage
  /** empties every cache (and tells `onInvalidate`); called on every change */
  invalidate(): void
  /** how many changes were seen (bumped by invalidate) */
  readonly generation: number
  /** entries held now, per cache (tests, metrics) */
  sizes(): CacheSizes
  /** stops listening to storage's changes */
  close(): void
}

export interface CacheSizes {
  readonly signIns: number
  readonly access: number
  readonly sealedBytes: number
}

export interface CoreCacheOptions {
  /** called after every invalidation (the core drops its data keys' per-vault entries) */
  readonly onInvalidate?: () => void
  /** bound of each entry-counted cache; default 10,000 */
  readonly maxEntries?: number
  /** bound of the sealed rows kept, in bytes; default 16 MiB (and an eighth of it for overrides) */
  readonly maxSealedBytes?: number
}

/** A cached sign-in is asked of storage again after this long (by the request's clock): last use keeps being recorded. */
export const SIGN_IN_RECHECK_MS = 30_000

interface SignInEntry {
  readonly grant: AccessGrant
  readonly loadedAt: number
}

interface Held<T> {
  readonly v: T
}

type Current = CurrentState<CurrentOptions>
type Overrides = { allowed: boolean; overrides: OverrideRow[] }

const SEALED_ROW_OVERHEAD = 64

export function createCoreCache(base: Storage, o: CoreCacheOptions = {}): CoreCache {
  const max = o.maxEntries ?? 10_000
  let generation = 0
  const signIns = new LRUCache<string, SignInEntry>({ max })
  const access = new LRUCache<string, Held<VaultAccess[]>>({ max })
  // a person's whole list (the vaults page, GET /api/env/vaults), bounded by the vaults it holds
  const lists = new LRUCache<string, Held<VaultAccess[]>>({ maxSize: 10 * max, sizeCalculation: (h) => h.v.length + 1 })
  const vaults = new LRUCache<string, Held<VaultInfo[]>>({ max })
  const ci = new LRUCache<string, Held<CiIdentityRecord[]>>({ max })
  const sizeOf = (rows: readonly ({ name: string; sealed: Uint8Array } | { name: string })[]): number => {
    let n = SEALED_ROW_OVERHEAD
    for (const r of rows) n += ('sealed' in r ? r.sealed.byteLength : 0) + 2 * r.name.length + SEALED_ROW_OVERHEAD
    return n
  }
  const sealedMax = o.maxSealedBytes ?? 16 * 1024 * 1024
  const current = new LRUCache<string, Held<Current>>({ maxSize: sealedMax, sizeCalculation: (h) => sizeOf(h.v.variables) })
  const overrides = new LRUCache<string, Held<Overrides>>({ maxSize: sealedMax / 8, sizeCalculation: (h) => sizeOf(h.v.overrides) })
  const all = [signIns, access, lists, vaults, ci, current, overrides] as const

  const invalidate = (): void => {
    generation++
    for (const c of all) c.clear()
    o.onInvalidate?.()
  }

  /** The held answer for `key`, or `load()`'s, kept unless a change happened meanwhile. */
  async function held<T>(cache: LRUCache<string, Held<T>>, key: string, load: () => Promise<T>): Promise<T> {
    const hit = cache.get(key)
    if (hit) return hit.v
    const g = generation
    const v = await load()
    // too big for the cache: lru-cache refuses it (an entry over maxSize is never kept)
    if (g === generation) cache.set(key, { v })
    return v
  }

  const changing = onChanges(base, invalidate)
  const watching = typeof base.watchChanges === 'function'
  const stopWatching = watching ? (base.watchChanges as NonNullable<Storage['watchChanges']>)(invalidate) : () => {}
  if (!watching)
    return {
      storage: changing,
      invalidate,
      get generation() {
        return generation
      },
      sizes,
      close: stopWatching,
    }

  const storage: Storage = {
    ...changing,
    findToken: (<K extends keyof FoundToken>(tokenHash: string, kind: K, now: Date, idleCutoff: Date): Promise<FoundToken[K] | null> =>
      kind === 'access'
        ? (accessGrant(tokenHash, now, idleCutoff) as Promise<FoundToken[K] | null>)
        : base.findToken(tokenHash, kind, now, idleCutoff)) as Storage['findToken'],
    async listVaults(personId, filter) {
      const vaultId = filter?.vaultId
      if (vaultId === undefined) {
        const list = await held(lists, personId, () => base.listVaults(personId))
        return handOut(list, [...list])
      }
      return [...(await held(access, `${vaultId}\n${personId}`, () => base.listVaults(personId, { vaultId })))]
    },
    async findVaults(filter) {
      const id = onlyId(filter)
      if (id === null) return base.findVaults(filter)
      return [...(await held(vaults, id, () => base.findVaults({ id })))]
    },
    async findCiIdentities(filter) {
      const id = onlyId(filter)
      if (id === null) return base.findCiIdentities(filter)
      return [...(await held(ci, id, () => base.findCiIdentities({ id })))]
    },
    readCurrent: (async (vaultId: string, environment: string, options?: CurrentOptions) => {
      const names = options?.names
      const key = `${vaultId}\n${environment}\n${options?.values === false ? 'meta' : 'sealed'}\n${names === undefined ? '*' : names.join('\n')}`
      const r = await held(current, key, () => base.readCurrent(vaultId, environment, options))
      return { version: r.version, variables: [...r.variables] }
    }) as Storage['readCurrent'],
    async readOverrides(vaultId, environment, personId) {
      const r = await held(overrides, `${vaultId}\n${environment}\n${personId ?? ''}`, () => base.readOverrides(vaultId, environment, personId))
      return { allowed: r.allowed, overrides: [...r.overrides] }
    },
  }

  /** An access token's live grant: the cached one while it is live at `now`, else storage's. */
  async function accessGrant(tokenHash: string, now: Date, idleCutoff: Date): Promise<AccessGrant | null> {
    const t = now.getTime()
    const hit = signIns.get(tokenHash)
    if (hit && t >= hit.loadedAt && t - hit.loadedAt < SIGN_IN_RECHECK_MS) {
      const { signIn, tokenExpiresAt } = hit.grant
      if (signIn.revokedAt !== null || t >= signIn.expiresAt.getTime() || t >= tokenExpiresAt.getTime()) return null
      const lastUse = Math.max(signIn.createdAt.getTime(), signIn.lastUsedAt?.getTime() ?? 0)
      if (lastUse >= idleCutoff.getTime()) return hit.grant
    }
    const g = generation
    const grant = await base.findToken(tokenHash, 'access', now, idleCutoff)
    if (grant && g === generation) signIns.set(tokenHash, { grant, loadedAt: t })
    else signIns.delete(tokenHash)
    return grant
  }

  function sizes(): CacheSizes {
    return { signIns: signIns.size, access: access.size + lists.size, sealedBytes: current.calculatedSize + overrides.calculatedSize }
  }

  return {
    storage,
    invalidate,
    get generation() {
      return generation
    },
    sizes,
    close: stopWatching,
  }
}

/** The id of a filter that is exactly `{ id }`, else null (other filters are not cached). */
function onlyId(filter: object): string | null {
  const keys = Object.keys(filter)
  if (keys.length !== 1 || keys[0] !== 'id') return null
  const id = (filter as { id?: unknown }).id
  return typeof id === 'string' ? id : null
}

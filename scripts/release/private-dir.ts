// The folders the single executables unpack their native addons into (issue 9, issue 25): each
// one ours and not writable by anyone else, checked before use, so another local user can
// neither swap a folder of the chain nor the file in it between the hash check and dlopen.
import { lstatSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'

/** A folder that is ours and private: created 0700, refused if someone else owns it, it is a link, or others may write it. */
export function privateDir(path: string, uid: number | undefined): void {
  try {
    mkdirSync(path, { mode: 0o700 })
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e
  }
  const st = lstatSync(path)
  if (!st.isDirectory()) throw new Error(`${path} is not a directory`)
  if (uid !== undefined && st.uid !== uid) throw new Error(`${path} belongs to another user`)
  if ((st.mode & 0o077) !== 0) throw new Error(`${path} is open to other users (mode ${(st.mode & 0o777).toString(8)}); chmod 700 it`)
}

/**
 * A base folder the cache may live under: a real folder (not a link) of ours that nobody else
 * may write to (whoever may write a folder may rename what is in it). A cache folder of the
 * home (`~/.cache`, often 0755) passes; a folder in the shared temp folder must be 0700.
 */
export function ownedBase(path: string, uid: number | undefined): void {
  const st = lstatSync(path)
  if (!st.isDirectory()) throw new Error(`${path} is not a directory`)
  if (uid !== undefined && st.uid !== uid) throw new Error(`${path} belongs to another user`)
  if ((st.mode & 0o022) !== 0) throw new Error(`${path} may be written by other users (mode ${(st.mode & 0o777).toString(8)})`)
}

export interface CacheLocations {
  readonly xdgCacheHome: string | undefined
  readonly home: string
  readonly tmp: string
  readonly uid: number | undefined
}

/**
 * `$XDG_CACHE_HOME/envkeep/addons`, else `~/.cache/envkeep/addons`, else (home not writable)
 * `<tmp>/envkeep-<uid>/envkeep/addons`, whose base must be ours and 0700: in the shared temp
 * folder another user could have made it first.
 */
export function cacheRoot(l: CacheLocations): string {
  const candidates: { base: string; temp: boolean }[] = []
  if (l.xdgCacheHome?.startsWith('/')) candidates.push({ base: l.xdgCacheHome, temp: false })
  candidates.push({ base: join(l.home, '.cache'), temp: false })
  candidates.push({ base: join(l.tmp, `envkeep-${l.uid ?? 'user'}`), temp: true })
  let last: unknown
  for (const { base, temp } of candidates) {
    try {
      if (temp) privateDir(base, l.uid)
      else {
        mkdirSync(base, { recursive: true, mode: 0o700 })
        ownedBase(base, l.uid)
      }
      const envkeep = join(base, 'envkeep')
      privateDir(envkeep, l.uid)
      const addons = join(envkeep, 'addons')
      privateDir(addons, l.uid)
      return addons
    } catch (e) {
      last = e
    }
  }
  throw new Error(`no private folder for the native addons: ${(last as Error)?.message ?? 'unknown'}`)
}

import { chmodSync, chownSync, mkdirSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import t from 'tap'
import { tempDir } from './helpers.js'

// Issue 25: the single executables unpack their native addons to a cache folder, falling back
// to <tmp>/envkeep-<uid> when the home is not writable. Another local user could make that
// base folder first and swap what is inside between the hash check and dlopen: the base must
// be ours and closed to others. (Loaded by path: scripts/ is outside this package's build.)

interface Locations {
  xdgCacheHome: string | undefined
  home: string
  tmp: string
  uid: number | undefined
}
const mod = (await import(pathToFileURL(fileURLToPath(new URL('../../../scripts/release/private-dir.ts', import.meta.url))).href)) as {
  cacheRoot(l: Locations): string
}

const uid = process.getuid?.()
const OTHER = 65534 // nobody

t.test(
  'the temp fallback: a base folder made by another user, or open to others, is refused',
  { skip: uid === 0 ? false : 'needs root to make a folder of another user' },
  async (t) => {
    const dir = tempDir(t)
    const home = join(dir, 'home-is-a-file')
    writeFileSync(home, '') // the home cache cannot be made: the temp fallback is used
    const tmp = join(dir, 'tmp')
    mkdirSync(tmp)
    chmodSync(tmp, 0o1777)
    const base = join(tmp, `envkeep-${uid}`)

    mkdirSync(base, { mode: 0o777 })
    chmodSync(base, 0o777)
    chownSync(base, OTHER, OTHER)
    t.throws(() => mod.cacheRoot({ xdgCacheHome: undefined, home, tmp, uid }), /belongs to another user/, "another user's base folder")

    chownSync(base, uid!, 0)
    t.throws(() => mod.cacheRoot({ xdgCacheHome: undefined, home, tmp, uid }), /open to other users/, 'our folder, but open to others')

    chmodSync(base, 0o700)
    const root = mod.cacheRoot({ xdgCacheHome: undefined, home, tmp, uid })
    t.equal(root, join(base, 'envkeep', 'addons'), 'our own 0700 base folder is used')
    t.equal(statSync(join(base, 'envkeep')).mode & 0o777, 0o700)
  },
)

t.test('a cache base folder others may write to is passed over for the next one', async (t) => {
  const dir = tempDir(t)
  const xdg = join(dir, 'xdg')
  mkdirSync(xdg)
  chmodSync(xdg, 0o777)
  const home = join(dir, 'home')
  mkdirSync(home)
  const root = mod.cacheRoot({ xdgCacheHome: xdg, home, tmp: dir, uid })
  t.equal(root, join(home, '.cache', 'envkeep', 'addons'), 'the world-writable XDG cache is not used')
  chmodSync(xdg, 0o755)
  t.equal(mod.cacheRoot({ xdgCacheHome: xdg, home, tmp: dir, uid }), join(xdg, 'envkeep', 'addons'), 'an ordinary 0755 cache folder of ours is')
})

// Native addons inside a single executable (issue 9). A SEA cannot `require` a `.node` file
// from inside itself: the bytes are embedded as SEA assets, written once to a private cache
// folder named by their SHA-256, and loaded with process.dlopen. The folder chain is ours and
// mode 0700; the file's hash is checked again right before loading, so nobody else can swap
// it between the write and the load. Imported first by both entries (ESM evaluation order).
import { createHash, randomBytes } from 'node:crypto'
import { closeSync, fsyncSync, lstatSync, mkdirSync, openSync, readFileSync, renameSync, unlinkSync, writeSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import { getAsset } from 'node:sea'

declare const __ENVKEEP_VERSION__: string
declare const __ENVKEEP_COMMIT__: string
declare const __ENVKEEP_ADDONS__: string[]

const ADDONS: readonly string[] = __ENVKEEP_ADDONS__

;(globalThis as { __envkeepBuild?: unknown }).__envkeepBuild = {
  version: __ENVKEEP_VERSION__,
  commit: __ENVKEEP_COMMIT__,
  addonsNote:
    ADDONS.length === 0
      ? null
      : `Native addons (${ADDONS.join(', ')}) are unpacked to ~/.cache/envkeep/addons/<sha256>/ (mode 0700) and verified before loading.`,
}

function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex')
}

/** A folder that is ours and private: created 0700, refused if someone else owns it or it is a link. */
function privateDir(path: string): void {
  try {
    mkdirSync(path, { mode: 0o700 })
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e
  }
  const st = lstatSync(path)
  const uid = process.getuid?.()
  if (!st.isDirectory()) throw new Error(`${path} is not a directory`)
  if (uid !== undefined && st.uid !== uid) throw new Error(`${path} belongs to another user`)
  if ((st.mode & 0o077) !== 0) throw new Error(`${path} is open to other users (mode ${(st.mode & 0o777).toString(8)}); chmod 700 it`)
}

/** ~/.cache/envkeep/addons (or $XDG_CACHE_HOME/envkeep/addons); the temp folder when home is not writable. */
function cacheRoot(): string {
  const candidates: string[] = []
  const xdg = process.env.XDG_CACHE_HOME
  if (xdg?.startsWith('/')) candidates.push(xdg)
  candidates.push(join(homedir(), '.cache'))
  candidates.push(join(tmpdir(), `envkeep-${process.getuid?.() ?? 'user'}`))
  let last: unknown
  for (const base of candidates) {
    try {
      mkdirSync(base, { recursive: true, mode: 0o700 })
      const envkeep = join(base, 'envkeep')
      privateDir(envkeep)
      const addons = join(envkeep, 'addons')
      privateDir(addons)
      return addons
    } catch (e) {
      last = e
    }
  }
  throw new Error(`no private folder for the native addons: ${(last as Error)?.message ?? 'unknown'}`)
}

const loaded = new Map<string, unknown>()

function load(name: string): unknown {
  const done = loaded.get(name)
  if (done) return done
  const bytes = new Uint8Array(getAsset(`${name}.node`))
  const hash = sha256(bytes)
  const dir = join(cacheRoot(), hash)
  privateDir(dir)
  const file = join(dir, `${name}.node`)
  let present = false
  try {
    present = lstatSync(file).isFile() && sha256(readFileSync(file)) === hash
  } catch {
    present = false
  }
  if (!present) {
    const temp = join(dir, `.${name}.${randomBytes(6).toString('hex')}.tmp`)
    const fd = openSync(temp, 'wx', 0o500)
    try {
      writeSync(fd, bytes)
      fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
    try {
      renameSync(temp, file)
    } catch (e) {
      unlinkSync(temp)
      throw e
    }
  }
  // verified right before loading: the folder is ours and 0700, so the checked bytes are the loaded ones
  if (sha256(readFileSync(file)) !== hash) throw new Error(`${file} does not match the embedded ${name} addon`)
  const mod = { exports: {} as unknown }
  process.dlopen(mod, file)
  loaded.set(name, mod.exports)
  return mod.exports
}

;(globalThis as { __envkeepLoadAddon?: (name: string) => unknown }).__envkeepLoadAddon = (name: string) => {
  if (!ADDONS.includes(name)) throw new Error(`the addon ${name} is not embedded in this executable`)
  return load(name)
}

// Native addons inside a single executable (issue 9). A SEA cannot `require` a `.node` file
// from inside itself: the bytes are embedded as SEA assets, written once to a private cache
// folder named by their SHA-256, and loaded with process.dlopen. The folder chain is ours and
// mode 0700, its base folder ours and writable by nobody else (private-dir.ts); the file's
// hash is checked again right before loading, so nobody else can swap it between the write
// and the load. Imported first by both entries (ESM evaluation order).
import { createHash, randomBytes } from 'node:crypto'
import { closeSync, fsyncSync, lstatSync, openSync, readFileSync, renameSync, unlinkSync, writeSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import { getAsset } from 'node:sea'
import { cacheRoot, privateDir } from './private-dir.js'

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

const uid = process.getuid?.()

const loaded = new Map<string, unknown>()

function load(name: string): unknown {
  const done = loaded.get(name)
  if (done) return done
  const bytes = new Uint8Array(getAsset(`${name}.node`))
  const hash = sha256(bytes)
  const dir = join(cacheRoot({ xdgCacheHome: process.env.XDG_CACHE_HOME, home: homedir(), tmp: tmpdir(), uid }), hash)
  privateDir(dir, uid)
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

import { randomBytes } from 'node:crypto'
import { chmodSync, closeSync, fsyncSync, openSync, readFileSync, statSync, writeSync } from 'node:fs'
import { createLocalKeyring, type Keyring } from '@envkeep/env-api-plugin'
import { decodeMasterKey, type ServerConfig } from './config.js'

/** A key file that cannot be used; the message names the file, never its content. */
export class KeyFileError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'KeyFileError'
  }
}

/**
 * Writes a new random master key to `path` (base64url and a newline), mode
 * 0600. Never overwrites: an existing file fails with EEXIST.
 */
export function writeNewKeyFile(path: string, key: Uint8Array = randomBytes(32)): void {
  const fd = openSync(path, 'wx', 0o600)
  try {
    writeSync(fd, `${Buffer.from(key).toString('base64url')}\n`)
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  chmodSync(path, 0o600) // whatever the umask did
}

export interface LoadedKeyFile {
  readonly key: Uint8Array
  /** true when group or others may read the file */
  readonly tooOpen: boolean
}

/** Reads a key file; null when it does not exist. Throws KeyFileError when it holds no valid key. */
export function readKeyFile(path: string): LoadedKeyFile | null {
  let text: string
  let mode: number
  try {
    mode = statSync(path).mode
    text = readFileSync(path, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw new KeyFileError(`cannot read the master key file ${path}`, { cause: err })
  }
  try {
    return { key: decodeMasterKey(text, 'the master key file'), tooOpen: (mode & 0o077) !== 0 }
  } catch {
    throw new KeyFileError(`the master key file ${path} does not hold a 32-byte base64url key`)
  }
}

export type KeySource =
  | { readonly kind: 'env'; readonly keyring: Keyring }
  | { readonly kind: 'file'; readonly path: string; readonly keyring: Keyring; readonly tooOpen: boolean }
  | { readonly kind: 'none'; readonly path: string }

/**
 * The master key as configured: ENVKEEP_MASTER_KEY, else the key file
 * (ENVKEEP_MASTER_KEY_FILE or `<data-dir>/master.key`). A key file named
 * explicitly must exist. Never creates a key.
 */
export function loadKeySource(config: ServerConfig): KeySource {
  if (config.masterKeyFromEnv) return { kind: 'env', keyring: createLocalKeyring(config.masterKeyFromEnv) }
  const loaded = readKeyFile(config.masterKeyFile)
  if (!loaded) {
    if (config.masterKeyFileExplicit) throw new KeyFileError(`ENVKEEP_MASTER_KEY_FILE names ${config.masterKeyFile}, which does not exist`)
    return { kind: 'none', path: config.masterKeyFile }
  }
  if (loaded.tooOpen && !config.allowInsecureKeyFile) {
    throw new KeyFileError(`the master key file ${config.masterKeyFile} can be read by other users: run chmod 600 on it (or pass --allow-insecure-key-file)`)
  }
  return { kind: 'file', path: config.masterKeyFile, tooOpen: loaded.tooOpen, keyring: createFileKeyring(config.masterKeyFile, loaded.key) }
}

/**
 * A keyring over a key file that follows the file: when it is replaced
 * (`admin rotate-master-key` while the server runs), the next wrap or
 * unwrap uses the new key. Data keys already unwrapped stay valid, since
 * rotation re-wraps them without changing them.
 *
 * While a rotation runs, the data key a server reads may be wrapped by the
 * other key of the two (issue 25: a page write racing the rotation answered
 * 500): rewrapped under the next key (`<file>.new`) before the file is
 * swapped, or wrapped under the retiring key just before the swap. So an
 * unwrap that fails under the current key tries the key it replaced, then
 * the rotation's `<file>.new`. Wrapping always uses the current file's key;
 * a data key wrapped just before the swap is wrapped again by its maker
 * (`isCurrent`) or by the rotation's passes after the swap.
 */
export function createFileKeyring(path: string, initialKey: Uint8Array): Keyring {
  let stamp = fileStamp(path)
  let ring = createLocalKeyring(initialKey)
  let previous: Keyring | null = null

  function reloadIfChanged(): void {
    const now = fileStamp(path)
    if (now === null || now === stamp) return
    const loaded = readKeyFile(path)
    if (!loaded) return
    previous = ring
    ring = createLocalKeyring(loaded.key)
    stamp = now
  }

  function next(): Keyring | null {
    try {
      const loaded = readKeyFile(`${path}.new`)
      return loaded ? createLocalKeyring(loaded.key) : null
    } catch {
      return null // a half-written or foreign file: not a key to try
    }
  }

  return Object.freeze({
    async wrap(dataKey: Uint8Array, vaultId: string): Promise<Uint8Array> {
      reloadIfChanged()
      return ring.wrap(dataKey, vaultId)
    },
    async unwrap(wrapped: Uint8Array, vaultId: string): Promise<Uint8Array> {
      reloadIfChanged()
      try {
        return await ring.unwrap(wrapped, vaultId)
      } catch (err) {
        for (const other of [previous, next()]) {
          if (!other) continue
          try {
            return await other.unwrap(wrapped, vaultId)
          } catch {
            // not this one either
          }
        }
        throw err
      }
    },
    async isCurrent(wrapped: Uint8Array, vaultId: string): Promise<boolean> {
      reloadIfChanged()
      return ring.unwrap(wrapped, vaultId).then(
        () => true,
        () => false,
      )
    },
  })
}

function fileStamp(path: string): string | null {
  try {
    const s = statSync(path, { bigint: true })
    return `${s.ino}:${s.mtimeNs}:${s.size}`
  } catch {
    return null
  }
}

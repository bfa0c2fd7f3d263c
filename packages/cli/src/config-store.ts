import { randomBytes } from 'node:crypto'
import { mkdir, open, readFile, rename, rm } from 'node:fs/promises'
import { join } from 'node:path'
import lockfile from 'proper-lockfile'
import { CliError } from './errors.js'

/** One sign-in, stored per base URL. Tokens live only here, in a 0600 file. */
export interface SignIn {
  readonly baseUrl: string
  readonly issuer: string
  readonly tokenEndpoint: string
  readonly revocationEndpoint: string | null
  readonly clientId: string
  readonly resource: string
  readonly scope: string
  readonly accessToken: string
  readonly refreshToken: string
  /** Epoch milliseconds when the access token stops working. */
  readonly accessExpiresAt: number
  readonly signedInAt: string
  /** Who the server said signed in, at login and at each renewal: for display only, never trusted. */
  readonly person?: { readonly email: string; readonly name: string }
}

export interface StoreFile {
  version: 1
  /** The base URL of the last `login`, used when no other is given. */
  current: string | null
  signIns: Record<string, SignIn>
}

export interface StoreTx {
  read(): Promise<StoreFile>
  write(file: StoreFile): Promise<void>
}

export interface ConfigStore {
  readonly dir: string
  readonly file: string
  /** Reads without the lock (a snapshot; writes are atomic renames, so it is never half-written). */
  read(): Promise<StoreFile>
  /** Runs `fn` holding the file lock, so read-modify-write (and token refresh) is never interleaved. */
  withLock<T>(fn: (tx: StoreTx) => Promise<T>): Promise<T>
}

/** `$ENVKEEP_CONFIG_DIR`, else `$XDG_CONFIG_HOME/envkeep`, else `~/.config/envkeep`. */
export function resolveConfigDir(env: Readonly<Record<string, string | undefined>>, home: string): string {
  if (env.ENVKEEP_CONFIG_DIR) return env.ENVKEEP_CONFIG_DIR
  if (env.XDG_CONFIG_HOME) return join(env.XDG_CONFIG_HOME, 'envkeep')
  return join(home, '.config', 'envkeep')
}

function empty(): StoreFile {
  return { version: 1, current: null, signIns: {} }
}

/**
 * Writes `text` to `path` atomically with mode 0600: a new file beside it,
 * flushed, then renamed over the old one. A reader sees the old or the new
 * file, never a part.
 */
export async function writeFileAtomic(path: string, text: string): Promise<void> {
  const tmp = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`
  const fh = await open(tmp, 'wx', 0o600)
  try {
    await fh.writeFile(text, 'utf8')
    await fh.chmod(0o600)
    await fh.sync()
  } catch (err) {
    await fh.close().catch(() => {})
    await rm(tmp, { force: true })
    throw err
  }
  await fh.close()
  try {
    await rename(tmp, path)
  } catch (err) {
    await rm(tmp, { force: true })
    throw err
  }
}

export function createConfigStore(dir: string): ConfigStore {
  const file = join(dir, 'sign-ins.json')

  async function read(): Promise<StoreFile> {
    let text: string
    try {
      text = await readFile(file, 'utf8')
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return empty()
      throw new CliError(`cannot read the sign-ins file ${file} (${(err as NodeJS.ErrnoException).code ?? 'error'})`, { cause: err })
    }
    let parsed: unknown
    try {
      parsed = JSON.parse(text)
    } catch {
      throw new CliError(`the sign-ins file ${file} is not valid JSON`, { hint: `remove it and sign in again with: envkeep login` })
    }
    const f = parsed as Partial<StoreFile>
    if (!f || typeof f !== 'object' || f.version !== 1 || typeof f.signIns !== 'object' || f.signIns === null) {
      throw new CliError(`the sign-ins file ${file} is not in a format this envkeep knows`, { hint: 'remove it and sign in again with: envkeep login' })
    }
    return { version: 1, current: typeof f.current === 'string' ? f.current : null, signIns: { ...f.signIns } }
  }

  async function write(f: StoreFile): Promise<void> {
    await mkdir(dir, { recursive: true, mode: 0o700 })
    await writeFileAtomic(file, `${JSON.stringify(f, null, 2)}\n`)
  }

  async function withLock<T>(fn: (tx: StoreTx) => Promise<T>): Promise<T> {
    await mkdir(dir, { recursive: true, mode: 0o700 })
    let release: () => Promise<void>
    try {
      release = await lockfile.lock(file, {
        realpath: false,
        stale: 15_000,
        update: 5_000,
        retries: { retries: 60, factor: 1.2, minTimeout: 25, maxTimeout: 500 },
      })
    } catch (err) {
      throw new CliError(`another envkeep command is holding the sign-in lock (${file}.lock)`, {
        hint: 'wait for it to finish and try again',
        cause: err,
      })
    }
    try {
      return await fn({ read, write })
    } finally {
      await release().catch(() => {})
    }
  }

  return { dir, file, read, withLock }
}

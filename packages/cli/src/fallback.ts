import { execFile } from 'node:child_process'
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto'
import { mkdir, readdir, readFile, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { writeFileAtomic } from './config-store.js'
import { CliError, usageError } from './errors.js'

/**
 * What the offline copy needs of the command's context and target (context.ts, target.ts):
 * named here, not imported, so that the API client (which clears the copies at sign-out) and
 * the context that builds it do not import each other through this file.
 */
interface CopyContext {
  readonly store: { readonly dir: string }
  readonly deps: { readonly now: () => Date }
  err(text: string): void
}
interface CopyTarget {
  readonly baseUrl: string
  readonly vaultRef: string
  readonly environment: string
  readonly fallback: boolean
}

/**
 * The offline fallback (off by default): an encrypted copy of the last successful read of
 * each vault and environment, used by `run` and `pull` only when the server cannot be
 * reached. AES-256-GCM; the key in the OS keyring where one answers (macOS `security`,
 * Linux `secret-tool`), else a 0600 key file beside the sign-ins. The copy's additional data
 * binds server, vault and environment, so a copy cannot stand in for another.
 */

export interface FallbackOptions {
  readonly maxAgeMs: number
}

export const DEFAULT_MAX_AGE_MS = 7 * 24 * 3600 * 1000

export const FALLBACK_OPTIONS = {
  fallback: { type: 'boolean' },
  'fallback-max-age': { type: 'string' },
} as const

export const FALLBACK_HELP = `  --fallback       keep an encrypted offline copy of this read, and use it when the
                   server cannot be reached (never after 401, 403 or 404); also on
                   when the folder's link says "fallback": true
  --fallback-max-age D  refuse an offline copy older than D (30m, 24h, 7d; default 7d)`

/** `30m`, `24h`, `7d` (or seconds) → milliseconds. */
export function parseDuration(raw: string): number {
  const m = /^(\d+)\s*(s|m|h|d)?$/.exec(raw.trim())
  if (!m) throw usageError(`"${raw.slice(0, 30)}" is not a duration`, 'give it like 30m, 24h or 7d')
  const n = Number(m[1])
  const unit = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[(m[2] ?? 's') as 's' | 'm' | 'h' | 'd']
  return n * unit
}

/** The fallback options of a command (flags, else the linked folder's setting), or null when off. */
export function fallbackOptions(values: Record<string, string | boolean | undefined>, target: CopyTarget): FallbackOptions | null {
  const on = values.fallback === true || (values.fallback === undefined && target.fallback)
  if (!on) return null
  const age = values['fallback-max-age']
  return { maxAgeMs: typeof age === 'string' ? parseDuration(age) : DEFAULT_MAX_AGE_MS }
}

/** True for a failure where no answer came (or a proxy said the server is away): the fallback's case. */
export function isUnreachable(err: unknown): boolean {
  if (!(err instanceof CliError)) return false
  if (err.network) return true
  return err.server?.status === 502 || err.server?.status === 503 || err.server?.status === 504
}

const KEYRING_SERVICE = 'envkeep-fallback'

function run(cmd: string, args: string[], input?: string): Promise<string | null> {
  return new Promise((resolve) => {
    const child = execFile(cmd, args, { timeout: 3000 }, (err, stdout) => resolve(err ? null : stdout.trim()))
    if (input !== undefined) child.stdin?.end(input)
  })
}

/** The OS keyring, where one answers. */
async function keyringKey(create: boolean): Promise<Buffer | null> {
  if (process.env.ENVKEEP_FALLBACK_KEYRING === '0') return null
  if (process.platform === 'darwin') {
    const found = await run('security', ['find-generic-password', '-s', KEYRING_SERVICE, '-a', 'key', '-w'])
    if (found && /^[0-9a-f]{64}$/.test(found)) return Buffer.from(found, 'hex')
    if (!create) return null
    const key = randomBytes(32)
    return (await run('security', ['add-generic-password', '-s', KEYRING_SERVICE, '-a', 'key', '-w', key.toString('hex')])) !== null ? key : null
  }
  if (process.platform === 'linux' && process.env.DBUS_SESSION_BUS_ADDRESS) {
    const found = await run('secret-tool', ['lookup', 'service', KEYRING_SERVICE])
    if (found && /^[0-9a-f]{64}$/.test(found)) return Buffer.from(found, 'hex')
    if (!create) return null
    const key = randomBytes(32)
    return (await run('secret-tool', ['store', '--label=envkeep offline copies', 'service', KEYRING_SERVICE], key.toString('hex'))) !== null ? key : null
  }
  return null
}

async function key(dir: string, create: boolean): Promise<Buffer | null> {
  const fromKeyring = await keyringKey(create)
  if (fromKeyring) return fromKeyring
  const file = join(dir, 'fallback.key')
  try {
    const text = (await readFile(file, 'utf8')).trim()
    if (/^[0-9a-f]{64}$/.test(text)) return Buffer.from(text, 'hex')
  } catch {
    // none yet
  }
  if (!create) return null
  const k = randomBytes(32)
  await writeFileAtomic(file, `${k.toString('hex')}\n`)
  return k
}

function copyDir(ctx: CopyContext): string {
  return join(ctx.store.dir, 'fallback')
}

function copyName(baseUrl: string, vault: string, environment: string): string {
  return `${createHash('sha256').update(`${baseUrl}\n${vault}\n${environment}`).digest('hex').slice(0, 32)}.json`
}

/**
 * Version 2 binds `savedAt` too, so an edited date fails to open rather than outliving the
 * maximum age. A version 1 copy (its date unauthenticated) is treated as expired; the next
 * successful read replaces it.
 */
interface CopyFile {
  v: 1 | 2
  baseUrl: string
  vault: string
  environment: string
  savedAt: string
  iv: string
  tag: string
  data: string
}

/** Saves the copy of a successful read. A failure to save is a warning, never the command's failure. */
export async function writeFallback(
  ctx: CopyContext,
  target: CopyTarget,
  set: { vault: string; environment: string; variables: Record<string, string> },
): Promise<void> {
  try {
    const dir = copyDir(ctx)
    await mkdir(dir, { recursive: true, mode: 0o700 })
    const k = (await key(ctx.store.dir, true))!
    const iv = randomBytes(12)
    const savedAt = ctx.deps.now().toISOString()
    const cipher = createCipheriv('aes-256-gcm', k, iv)
    cipher.setAAD(additionalData(target.baseUrl, set.vault, set.environment, savedAt))
    const data = Buffer.concat([cipher.update(JSON.stringify(set.variables), 'utf8'), cipher.final()])
    const file: CopyFile = {
      v: 2,
      baseUrl: target.baseUrl,
      vault: set.vault,
      environment: set.environment,
      savedAt,
      iv: iv.toString('base64'),
      tag: cipher.getAuthTag().toString('base64'),
      data: data.toString('base64'),
    }
    await writeFileAtomic(join(dir, copyName(target.baseUrl, set.vault, set.environment)), JSON.stringify(file))
    // by name too, so a copy saved under the id is found when the folder links by name
    if (target.vaultRef !== set.vault) await writeFileAtomic(join(dir, copyName(target.baseUrl, target.vaultRef, set.environment)), JSON.stringify(file))
  } catch {
    ctx.err('warning: could not save the offline copy\n')
  }
}

/** What the copy's seal binds: which server, vault and environment, and when it was saved. */
function additionalData(baseUrl: string, vault: string, environment: string, savedAt: string): Buffer {
  return Buffer.from(`envkeep-fallback-v2\n${baseUrl}\n${vault}\n${environment}\n${savedAt}`)
}

function age(ms: number): string {
  const h = ms / 3_600_000
  return h < 1 ? `${Math.max(1, Math.round(ms / 60_000))} min` : h < 48 ? `${Math.round(h)} h` : `${Math.round(h / 24)} days`
}

/** The copy for this target, after the server could not be reached; else the original failure. */
export async function readFallback(
  ctx: CopyContext,
  target: CopyTarget,
  o: FallbackOptions,
  failure: unknown,
): Promise<{ vault: string; environment: string; variables: Record<string, string> }> {
  let file: CopyFile
  try {
    file = JSON.parse(await readFile(join(copyDir(ctx), copyName(target.baseUrl, target.vaultRef, target.environment)), 'utf8')) as CopyFile
  } catch {
    throw failure
  }
  const k = await key(ctx.store.dir, false)
  if (!k) throw failure
  if (file.v !== 2 || typeof file.savedAt !== 'string') {
    throw new CliError('the server cannot be reached, and the offline copy was saved by an older envkeep: its age cannot be trusted, so it counts as expired', {
      hint: 'the next read that reaches the server saves a new copy',
    })
  }
  const savedAt = new Date(file.savedAt)
  const old = ctx.deps.now().getTime() - savedAt.getTime()
  if (!(old >= 0) || old > o.maxAgeMs) {
    throw new CliError(`the server cannot be reached, and the offline copy is ${age(Math.max(0, old))} old, older than the ${age(o.maxAgeMs)} allowed`, {
      hint: 'wait for the server, or allow an older copy with --fallback-max-age',
    })
  }
  let variables: Record<string, string>
  try {
    const decipher = createDecipheriv('aes-256-gcm', k, Buffer.from(file.iv, 'base64'))
    decipher.setAAD(additionalData(target.baseUrl, file.vault, target.environment, file.savedAt))
    decipher.setAuthTag(Buffer.from(file.tag, 'base64'))
    variables = JSON.parse(Buffer.concat([decipher.update(Buffer.from(file.data, 'base64')), decipher.final()]).toString('utf8')) as Record<string, string>
  } catch {
    throw new CliError('the server cannot be reached, and the offline copy cannot be opened (damaged, or another key)', {
      hint: 'remove it: envkeep fallback clear',
    })
  }
  const host = new URL(target.baseUrl).host
  ctx.err(`warning: ${host} cannot be reached; using the offline copy of ${target.environment} saved ${file.savedAt} (${age(old)} old)\n`)
  return { vault: file.vault, environment: target.environment, variables }
}

/** Deletes the copies of one server (or all). Returns how many. */
export async function clearFallback(configDir: string, baseUrl: string | null): Promise<number> {
  const dir = join(configDir, 'fallback')
  let names: string[]
  try {
    names = await readdir(dir)
  } catch {
    return 0
  }
  let n = 0
  for (const name of names) {
    if (!name.endsWith('.json')) continue
    if (baseUrl !== null) {
      try {
        const f = JSON.parse(await readFile(join(dir, name), 'utf8')) as CopyFile
        if (f.baseUrl !== baseUrl) continue
      } catch {
        // unreadable: remove it
      }
    }
    await rm(join(dir, name), { force: true })
    n++
  }
  return n
}

import { existsSync, readFileSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { NAME_RE } from '@envkeep/dotenv'
import { CliError } from './errors.js'

export const LINK_FILE = '.envkeep.json'

/** What `envkeep link` writes: where the folder's variables live. No secret, ever. */
export interface LinkFile {
  readonly baseUrl: string
  readonly vault: { readonly id: string; readonly name: string }
  readonly environment: string
  /** keep an encrypted offline copy of the last pull (see `run --fallback`) */
  readonly fallback?: boolean
  /**
   * Names that make programs run code (see `isCodeVariable` of @envkeep/dotenv) that `run` may
   * still give the command: the person who keeps this folder allows them by name.
   */
  readonly allow?: readonly string[]
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** The nearest `.envkeep.json` from `cwd` up to the root, or null. */
export function findLink(cwd: string): { path: string; link: LinkFile } | null {
  let dir = cwd
  for (;;) {
    const path = join(dir, LINK_FILE)
    if (existsSync(path)) return { path, link: readLink(path) }
    const up = dirname(dir)
    if (up === dir) return null
    dir = up
  }
}

function readLink(path: string): LinkFile {
  let raw: unknown
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'))
  } catch {
    throw new CliError(`${path} is not valid JSON`, { hint: 'fix it, or write it again: envkeep link <vault> <environment>' })
  }
  const o = raw as Record<string, unknown> | null
  const vault = o?.vault as Record<string, unknown> | undefined
  const ok =
    o &&
    typeof o.baseUrl === 'string' &&
    typeof o.environment === 'string' &&
    vault &&
    typeof vault.id === 'string' &&
    UUID_RE.test(vault.id) &&
    typeof vault.name === 'string' &&
    (o.fallback === undefined || typeof o.fallback === 'boolean') &&
    (o.allow === undefined || (Array.isArray(o.allow) && o.allow.every((n) => typeof n === 'string' && NAME_RE.test(n))))
  if (!ok) throw new CliError(`${path} does not look like an envkeep link`, { hint: 'write it again: envkeep link <vault> <environment>' })
  return {
    baseUrl: o.baseUrl as string,
    vault: { id: vault.id as string, name: vault.name as string },
    environment: o.environment as string,
    ...(o.fallback === true ? { fallback: true } : {}),
    ...(Array.isArray(o.allow) && o.allow.length > 0 ? { allow: o.allow as string[] } : {}),
  }
}

export async function writeLink(dir: string, link: LinkFile): Promise<string> {
  const path = join(dir, LINK_FILE)
  await writeFile(path, `${JSON.stringify(link, null, 2)}\n`, { mode: 0o644 })
  return path
}

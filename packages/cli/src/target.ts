import type { Context } from './context.js'
import { usageError } from './errors.js'
import { findLink, LINK_FILE, type LinkFile } from './link.js'
import { normalizeBaseUrl } from './oauth.js'

/** Which server, vault and environment a command works on. */
export interface Target {
  readonly baseUrl: string
  /** a vault id or name, as given or linked */
  readonly vaultRef: string
  readonly environment: string
  /** the `.envkeep.json` used, if any */
  readonly linkPath: string | null
  /** the linked folder asks for the offline fallback */
  readonly fallback: boolean
  /** names the linked folder allows `run` to give a command although they run code */
  readonly allow: readonly string[]
}

type Values = Record<string, string | boolean | undefined>

/**
 * `<vault> <environment>` as given, else the nearest `.envkeep.json` up the tree (said on
 * stderr with --verbose). The server: --base-url, else ENVKEEP_BASE_URL, else the link's,
 * else the last login's.
 */
export async function resolveTarget(ctx: Context, values: Values, given: readonly [string, string] | null, usage: string): Promise<Target> {
  const flag = values['base-url'] as string | undefined
  if (given) {
    const found = safeFind(ctx)
    const baseUrl = await serverOf(ctx, flag, found?.link ?? null)
    return { baseUrl, vaultRef: given[0], environment: given[1], linkPath: null, fallback: false, allow: [] }
  }
  const found = findLink(ctx.deps.cwd)
  if (!found) {
    throw usageError(
      `give <vault> <environment>, or link this folder first (no ${LINK_FILE} here or above)`,
      `${usage}\n  or: envkeep link <vault> <environment>`,
    )
  }
  if (values.verbose === true) ctx.err(`using ${found.path} (vault ${found.link.vault.name}, ${found.link.environment})\n`)
  const baseUrl = await serverOf(ctx, flag, found.link)
  return {
    baseUrl,
    vaultRef: found.link.vault.id,
    environment: found.link.environment,
    linkPath: found.path,
    fallback: found.link.fallback === true,
    allow: found.link.allow ?? [],
  }
}

/**
 * The server: --base-url, else ENVKEEP_BASE_URL, else the link's (checked by the same https
 * rule as any other), else the last login's.
 */
export async function serverOf(ctx: Context, flag: string | undefined, link: LinkFile | null): Promise<string> {
  if (flag !== undefined || ctx.deps.env.ENVKEEP_BASE_URL || !link) return ctx.resolveBaseUrl(flag)
  return normalizeBaseUrl(link.baseUrl, ctx.deps.env.ENVKEEP_ALLOW_HTTP === '1')
}

function safeFind(ctx: Context) {
  try {
    return findLink(ctx.deps.cwd)
  } catch {
    return null
  }
}

/** `<vault> <environment>` from two positionals, null for none (the link), a usage error for one. */
export function pairOf(positionals: readonly string[], command: string): [string, string] | null {
  if (positionals.length === 0) return null
  if (positionals.length === 2) return [positionals[0]!, positionals[1]!]
  throw usageError(`${command}: give both <vault> and <environment>, or neither (in a linked folder)`)
}

import { isAbsolute, resolve } from 'node:path'
import { BASE_URL_HELP, type Command } from '../command.js'
import { writeFileAtomic } from '../config-store.js'
import type { Context } from '../context.js'
import { CliError, usageError } from '../errors.js'
import { NAME_RE } from '@envkeep/dotenv'
import { formatVariables, FORMATS, isFormat } from '../formats.js'
import { checkEnvironment, environmentHint, resolveVault } from '../resolve-vault.js'
import { fallbackOptions, FALLBACK_HELP, FALLBACK_OPTIONS, isUnreachable, readFallback, writeFallback, type FallbackOptions } from '../fallback.js'
import { didYouMean } from '../suggest.js'
import { isTerminal, visibleText } from '../untrusted.js'
import { allowedNames, heldBackNote, withoutCodeVariables } from '../child-env.js'
import { pairOf, resolveTarget, type Target } from '../target.js'

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export interface VariableSet {
  vault: string
  environment: string
  variables: Record<string, string>
  /** names whose value is the signed-in person's own personal override (the server's header; names only) */
  overridden?: string[]
  /** the server's ETag of what was read (asked for with `ifTag`) */
  tag?: string
}

/** A conditional read's answer when the environment did not change (304). */
export const NOT_MODIFIED = Symbol('not modified')

/** Reads one environment's variables (shared by pull, run, get and diff), with the offline fallback when asked. */
export async function readEnvironment(ctx: Context, target: Target, o: { fallback?: FallbackOptions | null }): Promise<VariableSet>
export async function readEnvironment(
  ctx: Context,
  target: Target,
  o?: { fallback?: FallbackOptions | null; ifTag?: string },
): Promise<VariableSet | typeof NOT_MODIFIED>
export async function readEnvironment(
  ctx: Context,
  target: Target,
  o: { fallback?: FallbackOptions | null; ifTag?: string } = {},
): Promise<VariableSet | typeof NOT_MODIFIED> {
  const environment = checkEnvironment(target.environment)
  const api = ctx.api(target.baseUrl, { ciVault: target.vaultRef })
  const fallback = o.fallback ?? null
  let vault: { id: string; label: string }
  let body: VariableSet | null
  let overriddenHeader = ''
  let tag: string | undefined
  try {
    vault = await resolveVault(api, target.vaultRef)
    body = await api.request<VariableSet>(`/api/env/${encodeURIComponent(vault.id)}/${encodeURIComponent(environment)}`, {
      what: `could not read ${environment} of vault ${vault.label}`,
      keepRaw: ['variables'], // values exactly as stored; names checked below
      onHeaders: (h) => {
        overriddenHeader = h.get(OVERRIDDEN_HEADER) ?? ''
        const etag = /^"([A-Za-z0-9_-]{1,64})"$/.exec(h.get('etag') ?? '')
        tag = etag ? etag[1] : undefined
      },
      ...(o.ifTag === undefined ? {} : { headers: { 'if-none-match': `"${o.ifTag}"` }, allowNotModified: true }),
    })
  } catch (err) {
    if (err instanceof CliError && err.server?.status === 404) {
      const id = await vaultIdOf(api, target.vaultRef)
      const h = id ? await environmentHint(api, id, environment).catch(() => null) : null
      if (h) throw new CliError(h.message, { server: err.server, hint: h.hint })
    }
    if (fallback && isUnreachable(err)) return readFallback(ctx, target, fallback, err)
    throw err
  }
  if (body === null) return NOT_MODIFIED
  const variables = body.variables
  if (!variables || typeof variables !== 'object' || Array.isArray(variables) || Object.values(variables).some((v) => typeof v !== 'string')) {
    throw new CliError(`could not read ${environment} of vault ${vault.label}: the answer has no variables`)
  }
  // a name becomes a shell word in `--format shell` and an environment variable in `run`
  const odd = Object.keys(variables).filter((n) => !NAME_RE.test(n) || n.length > 256).length
  if (odd > 0) {
    throw new CliError(
      `could not read ${environment} of vault ${vault.label}: the answer holds ${odd} name${odd === 1 ? '' : 's'} that no envkeep variable can have; nothing was written`,
    )
  }
  const set = { vault: vault.id, environment, variables }
  if (fallback) await writeFallback(ctx, target, set)
  // untrusted: only names this environment has are reported
  const overridden = overriddenHeader
    .split(',')
    .filter((n) => NAME_RE.test(n) && Object.hasOwn(variables, n))
    .slice(0, 1000)
  return { ...set, ...(overridden.length > 0 ? { overridden } : {}), ...(tag === undefined ? {} : { tag }) }
}

async function vaultIdOf(api: ReturnType<Context['api']>, ref: string): Promise<string | null> {
  if (UUID_RE.test(ref)) return ref.toLowerCase()
  try {
    return (await resolveVault(api, ref)).id
  } catch {
    return null
  }
}

/**
 * Values to standard output: exactly as stored to a pipe or a file; at a terminal with every
 * control character written out visibly (a value must not drive the terminal), saying so.
 */
export function writeValues(ctx: Context, text: string): void {
  if (!isTerminal(ctx.deps.stdout)) {
    ctx.out(text)
    return
  }
  const shown = visibleText(text)
  ctx.out(shown.text)
  if (shown.escaped) ctx.err(`${ctx.paint.yellow('note:')} control characters are shown escaped (\\x1b…) on a terminal; pipe or use -o for the exact value\n`)
}

export const pull: Command = {
  name: 'pull',
  summary: "print or save an environment's variables",
  help: `Usage: envkeep pull [<vault> <environment>] [--format dotenv|json|shell] [-o FILE]

Reads every variable of an environment and prints it, or writes it to FILE
(mode 0600, replaced atomically). <vault> is a vault id or a unique name.
Without <vault> <environment>, the folder's link (.envkeep.json, see envkeep link).

At a terminal, control characters in values are shown escaped (\\x1b); piped or
written with -o, the output is exact.

Formats (each reads back exactly what was stored: newlines, quotes, $, \\, unicode):
  dotenv  NAME='value' lines, as the dotenv package reads them (default)
  json    one JSON object, name -> value
  shell   export NAME='value' lines for sh/bash/zsh: eval "$(envkeep pull app dev --format shell)"

Options:
  -f, --format F   dotenv, json or shell
  --json           the same as --format json: {"NAME": "value", …}
  -o, --output F   write to file F instead of standard output
  --allow NAME     with --format shell: write NAME although it makes programs run
                   code (NODE_OPTIONS, BASH_ENV, PATH, …: held back otherwise, as
                   by envkeep run; also the link's "allow" list)
${FALLBACK_HELP}
${BASE_URL_HELP}
  -h, --help       show this help`,
  options: {
    format: { type: 'string', short: 'f' },
    json: { type: 'boolean' },
    output: { type: 'string', short: 'o' },
    allow: { type: 'string', multiple: true },
    ...FALLBACK_OPTIONS,
  },
  positionals: [0, 2],
  async run(ctx, { values, positionals }) {
    const format = values.json === true ? 'json' : ((values.format as string | undefined) ?? 'dotenv')
    if (!isFormat(format)) throw usageError(`unknown format "${format}"${didYouMean(format, FORMATS)}`, `use one of: ${FORMATS.join(', ')}`)
    const target = await resolveTarget(ctx, values, pairOf(positionals, 'pull'), 'usage: envkeep pull <vault> <environment>')
    const set = await readEnvironment(ctx, target, { fallback: fallbackOptions(values, target) })
    let variables = set.variables
    if (format === 'shell') {
      // written for a shell to evaluate: the same names as run holds back
      const { given, heldBack } = withoutCodeVariables(variables, [...allowedNames(values.allow), ...target.allow])
      if (heldBack.length > 0) ctx.err(`${ctx.paint.yellow('note:')} ${heldBackNote(heldBack)}\n`)
      variables = given
    }
    const text = formatVariables(variables, format)
    if (set.overridden) ctx.err(overriddenNotice(set.overridden))
    const output = values.output as string | undefined
    const count = Object.keys(variables).length
    if (output === undefined || output === '-') {
      writeValues(ctx, text)
      return 0
    }
    const path = isAbsolute(output) ? output : resolve(ctx.deps.cwd, output)
    try {
      await writeFileAtomic(path, text)
    } catch (err) {
      throw new CliError(`could not write ${output} (${(err as NodeJS.ErrnoException).code ?? 'error'})`, { cause: err })
    }
    ctx.err(`Wrote ${count} variable${count === 1 ? '' : 's'} of ${set.environment} to ${output} (mode 0600).\n`)
    return 0
  },
}

/** Response header naming the reader's own personal overrides (the server's OVERRIDDEN_HEADER). */
export const OVERRIDDEN_HEADER = 'envkeep-personal-overrides'

/** The stderr line of pull/run saying which values are the person's own overrides (names only). */
export function overriddenNotice(names: readonly string[]): string {
  return `From your personal overrides (yours only): ${names.join(', ')}\n`
}

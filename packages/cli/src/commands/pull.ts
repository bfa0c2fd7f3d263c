import { isAbsolute, resolve } from 'node:path'
import { BASE_URL_HELP, type Command } from '../command.js'
import { writeFileAtomic } from '../config-store.js'
import type { Context } from '../context.js'
import { CliError, usageError } from '../errors.js'
import { NAME_RE } from '../dotenv.js'
import { formatVariables, FORMATS, isFormat } from '../formats.js'
import { checkEnvironment, resolveVault } from '../resolve-vault.js'

export interface VariableSet {
  vault: string
  environment: string
  variables: Record<string, string>
}

/** Reads one environment's variables (shared by pull and run). */
export async function readEnvironment(ctx: Context, baseUrlFlag: string | undefined, vaultRef: string, env: string): Promise<VariableSet> {
  const environment = checkEnvironment(env)
  const api = ctx.api(await ctx.resolveBaseUrl(baseUrlFlag))
  const vault = await resolveVault(api, vaultRef)
  const body = await api.request<VariableSet>(`/api/env/${encodeURIComponent(vault.id)}/${encodeURIComponent(environment)}`, {
    what: `could not read ${environment} of vault ${vault.label}`,
    keepRaw: ['variables'], // values exactly as stored; names checked below
  })
  const variables = body.variables
  if (!variables || typeof variables !== 'object' || Array.isArray(variables) || Object.values(variables).some((v) => typeof v !== 'string')) {
    throw new CliError(`could not read ${environment} of vault ${vault.label}: the answer has no variables`)
  }
  // a name becomes a shell word in `--format shell` and an environment variable in `run`
  const odd = Object.keys(variables).filter((n) => !NAME_RE.test(n) || n.length > 256).length
  if (odd > 0) {
    throw new CliError(`could not read ${environment} of vault ${vault.label}: the answer holds ${odd} name${odd === 1 ? '' : 's'} that no envkeep variable can have; nothing was written`)
  }
  return { vault: vault.id, environment, variables }
}

export const pull: Command = {
  name: 'pull',
  summary: "print or save an environment's variables",
  help: `Usage: envkeep pull <vault> <environment> [--format dotenv|json|shell] [-o FILE]

Reads every variable of an environment and prints it, or writes it to FILE
(mode 0600, replaced atomically). <vault> is a vault id or a unique name.

Formats (each reads back exactly what was stored: newlines, quotes, $, \\, unicode):
  dotenv  NAME='value' lines, as the dotenv package reads them (default)
  json    one JSON object, name -> value
  shell   export NAME='value' lines for sh/bash/zsh: eval "$(envkeep pull app dev --format shell)"

Options:
  -f, --format F   dotenv, json or shell
  -o, --output F   write to file F instead of standard output
${BASE_URL_HELP}
  -h, --help       show this help`,
  options: {
    format: { type: 'string', short: 'f' },
    output: { type: 'string', short: 'o' },
  },
  positionals: [2, 2],
  async run(ctx, { values, positionals }) {
    const format = (values.format as string | undefined) ?? 'dotenv'
    if (!isFormat(format)) throw usageError(`unknown format "${format}"`, `use one of: ${FORMATS.join(', ')}`)
    const set = await readEnvironment(ctx, values['base-url'] as string | undefined, positionals[0]!, positionals[1]!)
    const text = formatVariables(set.variables, format)
    const output = values.output as string | undefined
    const count = Object.keys(set.variables).length
    if (output === undefined || output === '-') {
      ctx.out(text)
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

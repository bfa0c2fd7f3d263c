import { NAME_RE } from '@envkeep/dotenv'
import { BASE_URL_HELP, type Command } from '../command.js'
import type { Context } from '../context.js'
import { usageError } from '../errors.js'
import { checkEnvironment, resolveVault } from '../resolve-vault.js'
import { resolveTarget, type Target } from '../target.js'

/**
 * Personal overrides (issue 24): `envkeep set NAME --personal` and
 * `envkeep unset NAME --personal` keep or drop the person's own value of a
 * variable, used for their reads only, where the environment's owners allow it.
 */

function overridePath(vaultId: string, environment: string, name: string): string {
  return `/api/env/${encodeURIComponent(vaultId)}/${encodeURIComponent(environment)}/overrides/${encodeURIComponent(name)}`
}

/** Sets (`value`) or removes (`null`) the person's override; prints what happened. */
export async function changeOverride(ctx: Context, target: Target, name: string, value: string | null, json: boolean): Promise<number> {
  const environment = checkEnvironment(target.environment)
  const api = ctx.api(target.baseUrl)
  const vault = await resolveVault(api, target.vaultRef)
  await api.request<unknown>(overridePath(vault.id, environment, name), {
    what: `could not ${value === null ? 'remove your override of' : 'set your override of'} ${name} in ${environment} of vault ${vault.label}`,
    method: value === null ? 'DELETE' : 'PUT',
    ...(value === null ? {} : { body: { value } }),
  })
  if (json) ctx.out(`${JSON.stringify({ vault: vault.id, environment, name, overridden: value !== null })}\n`)
  else
    ctx.out(
      value === null
        ? `Removed your override of ${name} in ${environment}: your reads get the shared value again.\n`
        : `Your own value of ${name} in ${environment} is set: your reads (pull, run, get, Reveal) use it; nobody else's do.\n`,
    )
  return 0
}

export const unset: Command = {
  name: 'unset',
  summary: 'remove your personal override of a variable (--personal)',
  help: `Usage: envkeep unset [<vault> <environment>] NAME --personal [--json]

Removes your own value of NAME (set with envkeep set NAME --personal): your reads
get the shared value again. Only personal overrides can be unset from here; the
shared variable is changed through a push or on the Variables page.

Options:
  --personal       required: remove your personal override
  --json           print {"vault", "environment", "name", "overridden": false}
${BASE_URL_HELP}
  -h, --help       show this help`,
  options: { personal: { type: 'boolean' }, json: { type: 'boolean' } },
  positionals: [1, 3],
  async run(ctx, { values, positionals }) {
    if (values.personal !== true) throw usageError('unset removes personal overrides only: envkeep unset NAME --personal')
    const name = positionals.length === 3 ? positionals[2]! : positionals[0]!
    if (positionals.length !== 1 && positionals.length !== 3) throw usageError('unset: give NAME (in a linked folder) or <vault> <environment> NAME')
    if (!NAME_RE.test(name) || name.length > 256) throw usageError(`"${name.slice(0, 60)}" is not a variable name`)
    const given: [string, string] | null = positionals.length === 3 ? [positionals[0]!, positionals[1]!] : null
    const target = await resolveTarget(ctx, values, given, 'usage: envkeep unset <vault> <environment> NAME --personal')
    return changeOverride(ctx, target, name, null, values.json === true)
  },
}

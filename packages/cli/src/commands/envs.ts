import { BASE_URL_HELP, type Command } from '../command.js'
import { CliError } from '../errors.js'
import { findLink } from '../link.js'
import { serverOf } from '../target.js'
import { listVaults, resolveVault } from '../resolve-vault.js'

export const envs: Command = {
  name: 'envs',
  summary: 'list the environments of a vault that you may read',
  help: `Usage: envkeep envs [<vault>] [--json] [--base-url URL]

Lists the environments of the vault (the linked folder's when none is given) that
your role may read.

Options:
  --json           print {vault: {id, name, role}, environments: [names]}
${BASE_URL_HELP}
  -h, --help       show this help`,
  options: { json: { type: 'boolean' } },
  positionals: [0, 1],
  async run(ctx, { values, positionals }) {
    const link = positionals[0] === undefined ? findLink(ctx.deps.cwd) : null
    if (positionals[0] === undefined && !link) throw new CliError('envs of which vault? give it, or link this folder (envkeep link)')
    const baseUrl = await serverOf(ctx, values['base-url'] as string | undefined, link?.link ?? null)
    const api = ctx.api(baseUrl, { ciVault: link ? link.link.vault.id : positionals[0]! })
    const id = link ? link.link.vault.id : (await resolveVault(api, positionals[0]!)).id
    const vault = (await listVaults(api)).find((v) => v.id === id)
    if (!vault) throw new CliError(`no vault with id ${id} is shared with you on ${baseUrl}`, { hint: 'list them with: envkeep vaults' })
    if (values.json === true) {
      ctx.out(`${JSON.stringify({ vault: { id: vault.id, name: vault.name, role: vault.role }, environments: vault.environments }, null, 2)}\n`)
      return 0
    }
    if (vault.environments.length === 0) ctx.err(`Your role (${vault.role}) may read no environment of vault ${vault.name}.\n`)
    else ctx.out(`${vault.environments.join('\n')}\n`)
    return 0
  },
}

import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { createInterface } from 'node:readline/promises'
import { BASE_URL_HELP, type Command } from '../command.js'
import type { Context } from '../context.js'
import { CliError, usageError } from '../errors.js'
import { findLink, LINK_FILE, writeLink } from '../link.js'
import { checkEnvironment, listVaults, resolveVault, type VaultListing } from '../resolve-vault.js'
import { didYouMean } from '../suggest.js'

async function pick<T>(ctx: Context, question: string, items: readonly T[], show: (t: T) => string): Promise<T> {
  ctx.err(`${question}\n${items.map((t, i) => `  ${i + 1}) ${show(t)}`).join('\n')}\n`)
  const rl = createInterface({ input: ctx.deps.stdin, output: ctx.deps.stderr, terminal: false })
  try {
    const answer = (await rl.question('Number: ')).trim()
    const n = Number(answer)
    if (!Number.isInteger(n) || n < 1 || n > items.length) throw usageError(`"${answer.slice(0, 20)}" is not one of 1 to ${items.length}`)
    return items[n - 1]!
  } finally {
    rl.close()
  }
}

export const link: Command = {
  name: 'link',
  summary: 'link this folder to a vault and environment (.envkeep.json)',
  help: `Usage: envkeep link [<vault> <environment>] [--fallback] [--json] [--base-url URL]

Writes ${LINK_FILE} in this folder: the server, the vault (id and name) and the
environment, and no secret (commit it if you like). Then pull, run, push, get,
set, diff and open work here and in every folder below without <vault> <environment>.
Without them, at a terminal, it asks; elsewhere it lists your vaults.

Options:
  --fallback       the folder's reads keep an encrypted offline copy (see run --help)
  --json           print the link written
${BASE_URL_HELP}
  -h, --help       show this help`,
  options: { fallback: { type: 'boolean' }, json: { type: 'boolean' } },
  positionals: [0, 2],
  async run(ctx, { values, positionals }) {
    const baseUrl = await ctx.resolveBaseUrl(values['base-url'] as string | undefined)
    const api = ctx.api(baseUrl)
    let vault: VaultListing
    let environment: string
    const list = await listVaults(api)
    if (positionals.length === 2) {
      const r = await resolveVault(api, positionals[0]!)
      const found = list.find((v) => v.id === r.id)
      if (!found) throw new CliError(`no vault with id ${r.id} is shared with you on ${baseUrl}`, { hint: 'list them with: envkeep vaults' })
      vault = found
      environment = checkEnvironment(positionals[1]!)
      if (!vault.environments.includes(environment)) {
        throw new CliError(`vault "${vault.name}" has no environment "${environment}" that you may read${didYouMean(environment, vault.environments)}`, {
          hint: vault.environments.length ? `environments you may read: ${vault.environments.join(', ')}` : 'your role may read no environment of this vault',
        })
      }
    } else if (positionals.length === 0) {
      const readable = list.filter((v) => v.environments.length > 0)
      if (!ctx.deps.isTTY) {
        throw usageError(
          'link: give <vault> <environment> (there is no terminal to ask at)',
          readable.length
            ? `your vaults: ${readable.map((v) => `${v.name} (${v.environments.join(', ')})`).join('; ')}`
            : 'no vault with an environment you may read is shared with you',
        )
      }
      if (readable.length === 0) throw new CliError('no vault with an environment you may read is shared with you')
      vault = await pick(ctx, 'Which vault?', readable, (v) => `${v.name}  (${v.id.slice(0, 8)}, ${v.role})`)
      environment = await pick(ctx, 'Which environment?', vault.environments, (e) => e)
    } else {
      throw usageError('link: give both <vault> and <environment>, or neither')
    }
    const written = { baseUrl, vault: { id: vault.id, name: vault.name }, environment, ...(values.fallback === true ? { fallback: true } : {}) }
    const path = await writeLink(ctx.deps.cwd, written)
    if (values.json === true) ctx.out(`${JSON.stringify({ path, ...written }, null, 2)}\n`)
    else ctx.err(`Linked ${ctx.deps.cwd} to ${environment} of vault ${vault.name} on ${baseUrl} (${path}).\n`)
    return 0
  },
}

export const unlink: Command = {
  name: 'unlink',
  summary: `remove this folder's ${LINK_FILE}`,
  help: `Usage: envkeep unlink

Removes ${LINK_FILE} from this folder (not from folders above).

Options:
  -h, --help       show this help`,
  options: {},
  positionals: [0, 0],
  async run(ctx) {
    const path = join(ctx.deps.cwd, LINK_FILE)
    const found = findLink(ctx.deps.cwd)
    if (!found || found.path !== path) {
      ctx.err(found ? `This folder has no ${LINK_FILE} (it uses ${found.path}); nothing to do.\n` : `This folder is not linked; nothing to do.\n`)
      return 0
    }
    await rm(path)
    ctx.err(`Removed ${path}.\n`)
    return 0
  },
}

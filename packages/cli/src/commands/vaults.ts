import { BASE_URL_HELP, type Command } from '../command.js'
import { clean } from '../errors.js'
import { listVaults } from '../resolve-vault.js'

export const vaults: Command = {
  name: 'vaults',
  summary: 'list the vaults you can reach, your role and the environments you may read',
  help: `Usage: envkeep vaults [--json] [--base-url URL]

Lists the vaults shared with you, your role in each and the environments your
role may read (none for a viewer).

Options:
  --json           print the server's answer as JSON
${BASE_URL_HELP}
  -h, --help       show this help`,
  options: { json: { type: 'boolean' } },
  positionals: [0, 0],
  async run(ctx, { values }) {
    const api = ctx.api(await ctx.resolveBaseUrl(values['base-url'] as string | undefined))
    const list = await listVaults(api)
    if (values.json === true) {
      ctx.out(`${JSON.stringify({ vaults: list }, null, 2)}\n`)
      return 0
    }
    if (list.length === 0) {
      ctx.err('No vaults are shared with you yet.\n')
      return 0
    }
    const rows = [
      ['NAME', 'ID', 'ROLE', 'ENVIRONMENTS'],
      ...list.map((v) => [clean(v.name, 80), v.id, clean(v.role, 20), v.environments.length ? v.environments.map((e) => clean(e, 64)).join(', ') : '-']),
    ]
    const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)))
    const lines = rows.map((r, n) => {
      const line = r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ')
      return n === 0 ? ctx.paint.bold(line) : line
    })
    ctx.out(`${lines.join('\n')}\n`)
    return 0
  },
}

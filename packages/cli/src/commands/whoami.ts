import { BASE_URL_HELP, type Command } from '../command.js'
import { listVaults } from '../resolve-vault.js'
import { SCOPE_PUSH } from '../oauth.js'
import { signInError } from '../errors.js'

function ageOf(ms: number): string {
  const m = Math.round(ms / 60_000)
  return m < 60 ? `${m} min` : m < 48 * 60 ? `${Math.round(m / 60)} h` : `${Math.round(m / 1440)} days`
}

export const whoami: Command = {
  name: 'whoami',
  summary: 'show the server, the sign-in and what it may do',
  help: `Usage: envkeep whoami [--json] [--base-url URL]

Shows the server, when this sign-in was made, whether it may send .env files, and
the vaults it reaches (checked with the server). The API does not name the person;
the server's Sign-ins page does.

Options:
  --json           print {server, signed_in_at, age_seconds, scope, can_push, vaults}
${BASE_URL_HELP}
  -h, --help       show this help`,
  options: { json: { type: 'boolean' } },
  positionals: [0, 0],
  async run(ctx, { values }) {
    const baseUrl = await ctx.resolveBaseUrl(values['base-url'] as string | undefined)
    const s = (await ctx.store.read()).signIns[baseUrl]
    if (!s) throw signInError(`not signed in to ${baseUrl}`, `sign in: envkeep login --base-url ${baseUrl}`)
    const vaults = await listVaults(ctx.api(baseUrl))
    const canPush = s.scope.split(' ').includes(SCOPE_PUSH)
    const at = new Date(s.signedInAt)
    const age = Math.max(0, ctx.deps.now().getTime() - at.getTime())
    if (values.json === true) {
      ctx.out(
        `${JSON.stringify({ server: baseUrl, signed_in_at: s.signedInAt, age_seconds: Math.round(age / 1000), scope: s.scope, can_push: canPush, vaults: vaults.map((v) => ({ id: v.id, name: v.name, role: v.role })) }, null, 2)}\n`,
      )
      return 0
    }
    ctx.out(
      `server:     ${baseUrl}\n` +
        `signed in:  ${s.signedInAt} (${ageOf(age)} ago)\n` +
        `may push:   ${canPush ? 'yes' : 'no (envkeep login --push allows it)'}\n` +
        `vaults:     ${vaults.length ? vaults.map((v) => `${v.name} (${v.role})`).join(', ') : 'none'}\n` +
        `sign-ins:   ${baseUrl}/sign-ins\n`,
    )
    return 0
  },
}

import { BASE_URL_HELP, type Command } from '../command.js'
import { listVaults } from '../resolve-vault.js'
import { SCOPE_PUSH } from '../oauth.js'
import { clean, signInError } from '../errors.js'
import { personLabel } from './login.js'

function ageOf(ms: number): string {
  const m = Math.round(ms / 60_000)
  return m < 60 ? `${m} min` : m < 48 * 60 ? `${Math.round(m / 60)} h` : `${Math.round(m / 1440)} days`
}

export const whoami: Command = {
  name: 'whoami',
  summary: 'show the server, the sign-in and what it may do',
  help: `Usage: envkeep whoami [--json] [--base-url URL]

Shows who signed in (as the server said at the last login or renewal), the server,
when this sign-in was made, whether it may send .env files, and the vaults it
reaches (checked with the server).

Options:
  --json           print {server, person, signed_in_at, age_seconds, scope, can_push, vaults}
${BASE_URL_HELP}
  -h, --help       show this help`,
  options: { json: { type: 'boolean' } },
  positionals: [0, 0],
  async run(ctx, { values }) {
    const baseUrl = await ctx.resolveBaseUrl(values['base-url'] as string | undefined)
    const s = (await ctx.store.read()).signIns[baseUrl]
    if (!s) throw signInError(`not signed in to ${baseUrl}`, `sign in: envkeep login --base-url ${baseUrl}`)
    const vaults = await listVaults(ctx.api(baseUrl))
    // read again: the request above may have renewed the sign-in, and with it who the server says it is
    const person = (await ctx.store.read()).signIns[baseUrl]?.person ?? s.person ?? null
    const canPush = s.scope.split(' ').includes(SCOPE_PUSH)
    const at = new Date(s.signedInAt)
    const age = Math.max(0, ctx.deps.now().getTime() - at.getTime())
    if (values.json === true) {
      ctx.out(
        `${JSON.stringify({ server: baseUrl, person: person ? { email: clean(person.email, 200), name: clean(person.name, 100) } : null, signed_in_at: s.signedInAt, age_seconds: Math.round(age / 1000), scope: s.scope, can_push: canPush, vaults: vaults.map((v) => ({ id: v.id, name: v.name, role: v.role })) }, null, 2)}\n`,
      )
      return 0
    }
    ctx.out(
      `person:     ${person ? personLabel(person) : 'not said by this server (sign in again to see it)'}\n` +
        `server:     ${baseUrl}\n` +
        `signed in:  ${s.signedInAt} (${ageOf(age)} ago)\n` +
        `may push:   ${canPush ? 'yes' : 'no (envkeep login --push allows it)'}\n` +
        `vaults:     ${vaults.length ? vaults.map((v) => `${v.name} (${v.role})`).join(', ') : 'none'}\n` +
        `sign-ins:   ${baseUrl}/sign-ins\n`,
    )
    return 0
  },
}

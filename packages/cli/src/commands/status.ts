import { BASE_URL_HELP, type Command } from '../command.js'
import type { Context } from '../context.js'
import type { ApiClient } from '../api-client.js'
import { clean, usageError } from '../errors.js'
import { reviewLinkOf } from '../sent-pushes.js'

export interface ImportStatus {
  import: string
  status: string
  environments?: string[]
  names?: string[]
  expires_at?: string
  decided_at?: string | null
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export async function fetchStatus(api: ApiClient, id: string): Promise<ImportStatus> {
  return api.request<ImportStatus>(`/api/env/imports/${encodeURIComponent(id)}`, { what: `could not read the status of push ${id.slice(0, 8)}` })
}

/** Polls until the push is no longer pending. */
export async function waitForDecision(ctx: Context, api: ApiClient, id: string, first?: ImportStatus): Promise<ImportStatus> {
  let s = first ?? (await fetchStatus(api, id))
  if (s.status === 'pending') ctx.err('Waiting for a person to apply or reject the push (Ctrl-C stops waiting; the push stays pending)…\n')
  while (s.status === 'pending') {
    await ctx.deps.sleep(ctx.deps.pollIntervalMs)
    s = await fetchStatus(api, id)
  }
  return s
}

/** 0 for applied or still pending, 1 for rejected or expired. */
export function statusExitCode(s: ImportStatus): number {
  return s.status === 'rejected' || s.status === 'expired' ? 1 : 0
}

export function describeStatus(ctx: Context, s: ImportStatus): string {
  const word = clean(s.status, 20)
  const painted = word === 'applied' ? ctx.paint.green(word) : word === 'pending' ? ctx.paint.yellow(word) : ctx.paint.red(word)
  const lines = [`Push ${clean(s.import, 40)}: ${painted}`]
  if (s.environments?.length) lines.push(`  environment: ${s.environments.map((e) => clean(e, 64)).join(', ')}`)
  if (s.names) lines.push(`  names (${s.names.length}): ${s.names.map((n) => clean(n, 256)).join(', ')}`)
  if (s.decided_at) lines.push(`  decided at:  ${clean(s.decided_at, 40)}`)
  else if (s.expires_at) lines.push(`  expires at:  ${clean(s.expires_at, 40)}`)
  return `${lines.join('\n')}\n`
}

export const status: Command = {
  name: 'status',
  summary: 'show whether a push was applied, rejected or expired',
  help: `Usage: envkeep status <import-id> [--wait] [--json] [--base-url URL]

Shows the status of a push you sent: pending, applied, rejected or expired.

Options:
  --wait           poll until a person applies or rejects it (or it expires);
                   exit code 0 when applied, 1 when rejected or expired
  --json           print {import, status, environments, names, expires_at,
                   decided_at, url} (url: the review page, null when this machine
                   did not send the push)
${BASE_URL_HELP}
  -h, --help       show this help`,
  options: { wait: { type: 'boolean' }, json: { type: 'boolean' } },
  positionals: [1, 1],
  async run(ctx, { values, positionals }) {
    const id = positionals[0]!
    if (!UUID_RE.test(id)) throw usageError(`"${id.slice(0, 60)}" is not a push id`, 'it is the id envkeep push printed')
    const api = ctx.api(await ctx.resolveBaseUrl(values['base-url'] as string | undefined))
    const s = values.wait === true ? await waitForDecision(ctx, api, id) : await fetchStatus(api, id)
    const url = await reviewLinkOf(ctx.store.dir, id, api.baseUrl)
    if (values.json === true) ctx.out(`${JSON.stringify({ ...s, url }, null, 2)}\n`)
    else ctx.out(`${describeStatus(ctx, s)}  review page: ${url ?? 'not known here (the push was sent from another machine)'}\n`)
    return values.wait === true ? statusExitCode(s) : 0
  },
}

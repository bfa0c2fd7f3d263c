import { readFile } from 'node:fs/promises'
import { isAbsolute, resolve } from 'node:path'
import { BASE_URL_HELP, type Command } from '../command.js'
import type { Context } from '../context.js'
import { MAX_REFUSED, parseDotenv, type ParseResult, type RefusedLine } from '@envkeep/dotenv'
import { clean, CliError } from '../errors.js'
import { sameOriginUrl } from '../untrusted.js'
import { checkEnvironment, resolveVault } from '../resolve-vault.js'
import { resolveTarget, type Target } from '../target.js'
import { rememberPush } from '../sent-pushes.js'
import { describeStatus, statusExitCode, waitForDecision } from './status.js'

/** The server refuses bodies over 1 MiB. */
const MAX_BODY_BYTES = 1_048_576

interface Created {
  import: string
  status: string
  names?: string[]
  overwrites?: string[]
  expires_at?: string
  url?: string
}

export function refusedLines(ctx: Context, refused: readonly RefusedLine[]): string {
  if (refused.length === 0) return ''
  const w = Math.max(...refused.map((r) => String(r.line).length))
  const nameW = Math.min(40, Math.max(4, ...refused.map((r) => r.name.length)))
  const rows = refused.map((r) => `  line ${String(r.line).padStart(w)}  ${(r.name || '-').padEnd(nameW)}  ${r.reason}`)
  return `${ctx.paint.yellow(`Refused ${refused.length} line${refused.length === 1 ? '' : 's'}`)}, not sent:\n${rows.join('\n')}\n`
}

export async function readDotenvFile(ctx: Context, file: string): Promise<ParseResult> {
  const path = isAbsolute(file) ? file : resolve(ctx.deps.cwd, file)
  let bytes: Buffer
  try {
    bytes = await readFile(path)
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    throw new CliError(code === 'ENOENT' ? `no file ${file}` : `could not read ${file} (${code ?? 'error'})`, { cause: err })
  }
  let text: string
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes)
  } catch {
    throw new CliError(`${file} is not UTF-8 text`)
  }
  return parseDotenv(text)
}

/** Sends variables as one push; the review link only when it is on the server's own origin. */
export async function sendPush(
  ctx: Context,
  target: Target,
  variables: Record<string, string>,
  refused: readonly RefusedLine[],
  label: string,
  references?: Record<string, string>,
) {
  const environment = checkEnvironment(target.environment)
  const body = references ? { variables, references, refused } : { variables, refused }
  const size = Buffer.byteLength(JSON.stringify(body), 'utf8')
  if (size > MAX_BODY_BYTES) {
    throw new CliError(`${label} is too large to push: ${size.toLocaleString('en-US')} bytes to send, the server takes at most 1 MiB`, {
      hint: 'split it into several pushes',
    })
  }
  const api = ctx.api(target.baseUrl)
  const vault = await resolveVault(api, target.vaultRef)
  const created = await api.request<Created>(`/api/env/${encodeURIComponent(vault.id)}/${encodeURIComponent(environment)}/imports`, {
    what: `could not push ${label} to ${environment} of vault ${vault.label}`,
    method: 'POST',
    body,
  })
  let link: string | null = null
  let badLink: CliError | null = null
  if (created.url !== undefined) {
    try {
      link = sameOriginUrl(created.url, api.baseUrl, `the push ${clean(String(created.import), 40)} was sent, but its review link`)
    } catch (err) {
      badLink = err as CliError
    }
  }
  if (link) await rememberPush(ctx.store.dir, String(created.import).toLowerCase(), { baseUrl: api.baseUrl, url: link, at: ctx.deps.now().toISOString() })
  return {
    api,
    vault,
    created,
    link,
    badLink,
    names: created.names ?? Object.keys({ ...variables, ...references }),
    overwrites: new Set(created.overwrites ?? []),
  }
}

export const push: Command = {
  name: 'push',
  summary: 'send a .env file for a person to review and apply',
  help: `Usage: envkeep push [<vault> <environment>] [FILE] [--wait] [--dry-run] [--json]

Reads FILE (default .env) with the same rules as the dotenv package (comments,
export, single/double/back quotes, multi-line quoted values, \\n and \\r in double
quotes, # comments after unquoted values, the last of duplicate names wins) and
sends its variables as a push that a person reviews and applies on the server.
Every line not sent is listed with its line number and the reason, and shown to
the reviewer too: bad name, empty value, value over 65,536 bytes, duplicate of a
later line, unparseable line, names beginning with ENVKEEP_.

The sign-in must be allowed to send .env files: envkeep login --push.

Options:
  --wait           follow the push until it is applied, rejected or expires
                   (exit code 0 when applied, 1 otherwise)
  --dry-run        show what would be sent and refused; send nothing
  --json           print {import, status, vault, environment, names, overwrites,
                   expires_at, url} (url null when not on the server's origin)
${BASE_URL_HELP}
  -h, --help       show this help`,
  options: { wait: { type: 'boolean' }, 'dry-run': { type: 'boolean' }, json: { type: 'boolean' } },
  positionals: [0, 3],
  async run(ctx, { values, positionals }) {
    // [vault env [FILE]] or, in a linked folder, [FILE]
    const given = positionals.length >= 2 ? ([positionals[0]!, positionals[1]!] as [string, string]) : null
    const file = (positionals.length === 3 ? positionals[2] : positionals.length === 1 ? positionals[0] : undefined) ?? '.env'
    const target = await resolveTarget(ctx, values, given, 'usage: envkeep push <vault> <environment> [FILE]')
    const environment = checkEnvironment(target.environment)
    const parsed = await readDotenvFile(ctx, file)
    const names = Object.keys(parsed.variables)

    if (values['dry-run'] === true) {
      if (values.json === true) {
        ctx.out(`${JSON.stringify({ dry_run: true, environment, names, refused: parsed.refused }, null, 2)}\n`)
        return 0
      }
      ctx.out(
        `Dry run: would send ${names.length} variable${names.length === 1 ? '' : 's'} from ${file} to ${environment} of vault "${clean(target.vaultRef, 80)}":\n` +
          names.map((n) => `  ${n}  (line ${parsed.lines[n]})\n`).join('') +
          refusedLines(ctx, parsed.refused) +
          'Nothing was sent.\n',
      )
      return 0
    }
    if (names.length === 0) {
      ctx.err(refusedLines(ctx, parsed.refused))
      throw new CliError(`found no variables to send in ${file}`)
    }
    let refused = parsed.refused
    if (refused.length > MAX_REFUSED) {
      ctx.err(`note: ${refused.length} lines were refused; only the first ${MAX_REFUSED} are sent to the reviewer.\n`)
      refused = refused.slice(0, MAX_REFUSED)
    }
    const sent = await sendPush(ctx, target, parsed.variables, refused, file)
    if (values.json === true) {
      ctx.out(`${JSON.stringify({ ...sent.created, url: sent.link }, null, 2)}\n`)
    } else {
      ctx.out(
        `Sent ${sent.names.length} variable${sent.names.length === 1 ? '' : 's'} to ${environment} of vault ${sent.vault.label} for review:\n` +
          sent.names.map((n) => `  ${clean(n, 256)}${sent.overwrites.has(n) ? ctx.paint.yellow('  (overwrites the current value)') : ''}\n`).join('') +
          refusedLines(ctx, refused) +
          (sent.link ? `Review and apply it at: ${sent.link}\n` : '') +
          `Push id: ${clean(sent.created.import, 40)}  (envkeep status ${clean(sent.created.import, 40)})\n` +
          (sent.created.expires_at ? `It expires at ${clean(sent.created.expires_at, 40)} if nobody decides.\n` : ''),
      )
    }
    if (sent.badLink) throw sent.badLink
    const created = sent.created
    const api = sent.api
    if (values.wait !== true) return 0
    const final = await waitForDecision(ctx, api, created.import)
    ctx.out(describeStatus(ctx, final))
    return statusExitCode(final)
  },
}

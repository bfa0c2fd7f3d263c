import { readFile } from 'node:fs/promises'
import { isAbsolute, resolve } from 'node:path'
import { BASE_URL_HELP, type Command } from '../command.js'
import type { Context } from '../context.js'
import { MAX_REFUSED, parseDotenv, type ParseResult, type RefusedLine } from '../dotenv.js'
import { clean, CliError } from '../errors.js'
import { sameOriginUrl } from '../untrusted.js'
import { checkEnvironment, resolveVault } from '../resolve-vault.js'
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

function refusedLines(ctx: Context, refused: readonly RefusedLine[]): string {
  if (refused.length === 0) return ''
  const w = Math.max(...refused.map((r) => String(r.line).length))
  const nameW = Math.min(40, Math.max(4, ...refused.map((r) => r.name.length)))
  const rows = refused.map((r) => `  line ${String(r.line).padStart(w)}  ${(r.name || '-').padEnd(nameW)}  ${r.reason}`)
  return `${ctx.paint.yellow(`Refused ${refused.length} line${refused.length === 1 ? '' : 's'}`)}, not sent:\n${rows.join('\n')}\n`
}

async function readDotenvFile(ctx: Context, file: string): Promise<ParseResult> {
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

export const push: Command = {
  name: 'push',
  summary: 'send a .env file for a person to review and apply',
  help: `Usage: envkeep push <vault> <environment> [FILE] [--wait] [--dry-run] [--base-url URL]

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
${BASE_URL_HELP}
  -h, --help       show this help`,
  options: { wait: { type: 'boolean' }, 'dry-run': { type: 'boolean' } },
  positionals: [2, 3],
  async run(ctx, { values, positionals }) {
    const [vaultRef, envArg, fileArg] = positionals as [string, string, string | undefined]
    const environment = checkEnvironment(envArg)
    const file = fileArg ?? '.env'
    const parsed = await readDotenvFile(ctx, file)
    const names = Object.keys(parsed.variables)

    if (values['dry-run'] === true) {
      ctx.out(
        `Dry run: would send ${names.length} variable${names.length === 1 ? '' : 's'} from ${file} to ${environment} of vault "${clean(vaultRef, 80)}":\n` +
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
    const body = { variables: parsed.variables, refused }
    const size = Buffer.byteLength(JSON.stringify(body), 'utf8')
    if (size > MAX_BODY_BYTES) {
      throw new CliError(`${file} is too large to push: ${size.toLocaleString('en-US')} bytes to send, the server takes at most 1 MiB`, {
        hint: 'split it into several pushes',
      })
    }

    const api = ctx.api(await ctx.resolveBaseUrl(values['base-url'] as string | undefined))
    const vault = await resolveVault(api, vaultRef)
    const created = await api.request<Created>(`/api/env/${encodeURIComponent(vault.id)}/${encodeURIComponent(environment)}/imports`, {
      what: `could not push ${file} to ${environment} of vault ${vault.label}`,
      method: 'POST',
      body,
    })
    const overwrites = new Set(created.overwrites ?? [])
    const sent = created.names ?? names
    // the review link is printed only when it is on the server's own origin
    let link: string | null = null
    let badLink: CliError | null = null
    if (created.url !== undefined) {
      try {
        link = sameOriginUrl(created.url, api.baseUrl, `the push ${clean(String(created.import), 40)} was sent, but its review link`)
      } catch (err) {
        badLink = err as CliError
      }
    }
    ctx.out(
      `Sent ${sent.length} variable${sent.length === 1 ? '' : 's'} to ${environment} of vault ${vault.label} for review:\n` +
        sent.map((n) => `  ${clean(n, 256)}${overwrites.has(n) ? ctx.paint.yellow('  (overwrites the current value)') : ''}\n`).join('') +
        refusedLines(ctx, refused) +
        (link ? `Review and apply it at: ${link}\n` : '') +
        `Push id: ${clean(created.import, 40)}  (envkeep status ${clean(created.import, 40)})\n` +
        (created.expires_at ? `It expires at ${clean(created.expires_at, 40)} if nobody decides.\n` : ''),
    )
    if (badLink) throw badLink
    if (values.wait !== true) return 0
    const final = await waitForDecision(ctx, api, created.import)
    ctx.out(describeStatus(ctx, final))
    return statusExitCode(final)
  },
}

import { BASE_URL_HELP, type Command } from '../command.js'
import { CliError, usageError } from '../errors.js'
import { NAME_RE } from '@envkeep/dotenv'
import { fallbackOptions, FALLBACK_HELP, FALLBACK_OPTIONS } from '../fallback.js'
import { didYouMean } from '../suggest.js'
import { resolveTarget } from '../target.js'
import { readEnvironment, writeValues } from './pull.js'
import { changeOverride } from './personal.js'
import { isTerminal } from '../untrusted.js'
import { sendPush } from './push.js'

function nameAndPair(positionals: readonly string[], command: string): { name: string; given: [string, string] | null } {
  if (positionals.length === 1) return { name: positionals[0]!, given: null }
  if (positionals.length === 3) return { name: positionals[2]!, given: [positionals[0]!, positionals[1]!] }
  throw usageError(`${command}: give NAME (in a linked folder) or <vault> <environment> NAME`)
}

export const get: Command = {
  name: 'get',
  summary: "print one variable's value, raw (for $(envkeep get DB_URL))",
  help: `Usage: envkeep get [<vault> <environment>] NAME [--json]

Prints the value of NAME exactly as stored, with nothing added, for
DB_URL=$(envkeep get DB_URL). At a terminal a newline is added and control
characters are shown escaped (\\x1b), so a value cannot drive the terminal. The read is
logged on the server like every read.

Options:
  --json           print {"name": NAME, "value": value}
${FALLBACK_HELP}
${BASE_URL_HELP}
  -h, --help       show this help`,
  options: { json: { type: 'boolean' }, ...FALLBACK_OPTIONS },
  positionals: [1, 3],
  async run(ctx, { values, positionals }) {
    const { name, given } = nameAndPair(positionals, 'get')
    const target = await resolveTarget(ctx, values, given, 'usage: envkeep get <vault> <environment> NAME')
    const set = await readEnvironment(ctx, target, { fallback: fallbackOptions(values, target) })
    const value = Object.hasOwn(set.variables, name) ? set.variables[name] : undefined
    if (value === undefined) {
      const names = Object.keys(set.variables)
      throw new CliError(`${set.environment} has no variable ${name.slice(0, 256)}${didYouMean(name, names)}`, {
        hint: names.length ? `it has: ${names.slice(0, 30).join(', ')}${names.length > 30 ? ', …' : ''}` : 'it has no variables',
      })
    }
    if (values.json === true) writeValues(ctx, `${JSON.stringify({ name, value })}\n`)
    else writeValues(ctx, isTerminal(ctx.deps.stdout) ? `${value}\n` : value)
    return 0
  },
}

async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = []
  for await (const c of stream) chunks.push(Buffer.isBuffer(c) ? c : Buffer.from(c as string))
  try {
    // bytes that are not UTF-8 would be sent as U+FFFD: refused instead (issue 25)
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(Buffer.concat(chunks))
  } catch {
    throw new CliError('stdin is not UTF-8 text; nothing was sent')
  }
}

export const set: Command = {
  name: 'set',
  summary: "propose one variable's value (a one-variable push, for review)",
  help: `Usage: envkeep set [<vault> <environment>] NAME [--value V] [--json] < file
       envkeep set [<vault> <environment>] NAME --ref ENVIRONMENT.NAME
       envkeep set [<vault> <environment>] NAME --personal [--value V] < file

Sends NAME as a push of one variable, which a person reviews and applies like any
push; prints the review link. The value is read from standard input (one final
newline removed: envkeep set API_KEY < key.txt), or given with --value (visible in
your shell history and process list: prefer stdin).

With --ref, NAME becomes a reference to a variable of another environment of the
vault (envkeep set DB_URL --ref production.DATABASE_URL): every read gives the value
it leads to, with the reader's rights at that moment (someone who may not read
production is refused the whole read). Also sent as a push, for review.

With --personal, the value is your own override of NAME (where the environment's
owners allow personal overrides): written at once, no review, used for your reads
only (pull, run, get, Reveal), never anyone else's or a CI run's. envkeep unset NAME
--personal removes it.

Options:
  --value V        the value, instead of standard input
  --ref ENV.NAME   make NAME a reference to NAME in environment ENV
  --personal       set your own override of NAME instead of proposing a value
  --json           print the push as envkeep push --json does
${BASE_URL_HELP}
  -h, --help       show this help`,
  options: { value: { type: 'string' }, ref: { type: 'string' }, personal: { type: 'boolean' }, json: { type: 'boolean' } },
  positionals: [1, 3],
  async run(ctx, { values, positionals }) {
    const { name, given } = nameAndPair(positionals, 'set')
    if (!NAME_RE.test(name) || name.length > 256)
      throw usageError(`"${name.slice(0, 60)}" is not a variable name: use letters, digits and underscores, not starting with a digit`)
    const target = await resolveTarget(ctx, values, given, 'usage: envkeep set <vault> <environment> NAME')
    if (typeof values.ref === 'string') {
      if (typeof values.value === 'string' || values.personal === true) throw usageError('--ref takes no --value or --personal')
      const ref = values.ref.trim()
      if (!/^[a-z0-9][a-z0-9-]{0,62}\.[A-Za-z_][A-Za-z0-9_]*$/.test(ref)) throw usageError('--ref takes ENVIRONMENT.NAME, for example production.DATABASE_URL')
      const sent = await sendPush(ctx, target, {}, [], name, { [name]: ref })
      if (values.json === true) ctx.out(`${JSON.stringify({ ...sent.created, url: sent.link }, null, 2)}\n`)
      else
        ctx.out(
          `Sent ${name} as a reference to ${ref} to ${target.environment} of vault ${sent.vault.label} for review.\n` +
            (sent.link ? `Review and apply it at: ${sent.link}\n` : '') +
            `Push id: ${sent.created.import}\n`,
        )
      if (sent.badLink) throw sent.badLink
      return 0
    }
    let value: string
    if (typeof values.value === 'string') value = values.value
    else {
      if ((ctx.deps.stdin as { isTTY?: boolean }).isTTY) ctx.err(`Type the value of ${name}, then Ctrl-D:\n`)
      value = (await readAll(ctx.deps.stdin)).replace(/\r?\n$/, '')
    }
    if (value === '') throw usageError(`the value of ${name} is empty`, 'give it on standard input or with --value')
    if (values.personal === true) return changeOverride(ctx, target, name, value, values.json === true)
    const sent = await sendPush(ctx, target, { [name]: value }, [], name)
    if (values.json === true) ctx.out(`${JSON.stringify({ ...sent.created, url: sent.link }, null, 2)}\n`)
    else {
      ctx.out(
        `Sent ${name} to ${target.environment} of vault ${sent.vault.label} for review${sent.overwrites.has(name) ? ' (it overwrites the current value)' : ''}.\n` +
          (sent.link ? `Review and apply it at: ${sent.link}\n` : '') +
          `Push id: ${sent.created.import}\n`,
      )
    }
    if (sent.badLink) throw sent.badLink
    return 0
  },
}

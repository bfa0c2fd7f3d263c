import { BASE_URL_HELP, type Command } from '../command.js'
import { fallbackOptions, FALLBACK_OPTIONS } from '../fallback.js'
import { resolveTarget } from '../target.js'
import { readEnvironment, writeValues } from './pull.js'
import { readDotenvFile } from './push.js'

export const diff: Command = {
  name: 'diff',
  summary: 'compare a local .env with the environment (names; values on request)',
  help: `Usage: envkeep diff [<vault> <environment>] [FILE] [--show-values] [--json]

Compares FILE (default .env, read as push reads it) with the environment:
  + NAME   only in the file (a push would add it)
  ~ NAME   in both, with another value
  - NAME   only in the environment
Values are not shown unless --show-values. Exit code 0 when equal, 1 when
different (2 for bad usage).

Options:
  --show-values    show both values of changed names, and the values added or removed
  --json           print {equal, added: [names], changed: [names], removed: [names]}
                   (with --show-values, also values: {NAME: {file, environment}})
${BASE_URL_HELP}
  -h, --help       show this help`,
  options: { 'show-values': { type: 'boolean' }, json: { type: 'boolean' }, ...FALLBACK_OPTIONS },
  positionals: [0, 3],
  async run(ctx, { values, positionals }) {
    const given = positionals.length >= 2 ? ([positionals[0]!, positionals[1]!] as [string, string]) : null
    const file = (positionals.length === 3 ? positionals[2] : positionals.length === 1 ? positionals[0] : undefined) ?? '.env'
    const target = await resolveTarget(ctx, values, given, 'usage: envkeep diff <vault> <environment> [FILE]')
    const local = await readDotenvFile(ctx, file)
    const remote = (await readEnvironment(ctx, target, { fallback: fallbackOptions(values, target) })).variables
    const l = local.variables
    const added = Object.keys(l)
      .filter((n) => !(n in remote))
      .sort()
    const removed = Object.keys(remote)
      .filter((n) => !(n in l))
      .sort()
    const changed = Object.keys(l)
      .filter((n) => n in remote && remote[n] !== l[n])
      .sort()
    const equal = added.length + removed.length + changed.length === 0
    const show = values['show-values'] === true
    if (local.refused.length > 0)
      ctx.err(
        `note: ${local.refused.length} line${local.refused.length === 1 ? '' : 's'} of ${file} could not be read and are left out (envkeep push --dry-run lists them)\n`,
      )
    if (values.json === true) {
      const vals = show
        ? Object.fromEntries([...added, ...changed, ...removed].map((n) => [n, { file: l[n] ?? null, environment: remote[n] ?? null }]))
        : undefined
      writeValues(ctx, `${JSON.stringify({ equal, added, changed, removed, ...(vals ? { values: vals } : {}) }, null, 2)}\n`)
      return equal ? 0 : 1
    }
    if (equal) {
      ctx.err(`${file} and ${target.environment} hold the same ${Object.keys(l).length} variables.\n`)
      return 0
    }
    const q = (v: string | undefined) => JSON.stringify(v)
    const lines = [
      ...added.map((n) => ctx.paint.green(`+ ${n}${show ? ` = ${q(l[n])}` : ''}`)),
      ...changed.map((n) => ctx.paint.yellow(`~ ${n}${show ? `: ${q(remote[n])} -> ${q(l[n])}` : ''}`)),
      ...removed.map((n) => ctx.paint.red(`- ${n}${show ? ` = ${q(remote[n])}` : ''}`)),
    ]
    writeValues(ctx, `${lines.join('\n')}\n`)
    ctx.err(
      `${added.length} to add, ${changed.length} changed, ${removed.length} only in ${target.environment}${show ? '' : ' (values hidden; --show-values shows them)'}\n`,
    )
    return 1
  },
}

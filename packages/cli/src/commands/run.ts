import { spawn } from 'node:child_process'
import { constants } from 'node:os'
import { BASE_URL_HELP, type Command } from '../command.js'
import { CliError, usageError } from '../errors.js'
import { overriddenNotice, readEnvironment } from './pull.js'
import { fallbackOptions, FALLBACK_HELP, FALLBACK_OPTIONS } from '../fallback.js'
import { pipeMasked } from '../mask.js'
import { didYouMean } from '../suggest.js'
import { pairOf, resolveTarget } from '../target.js'

const FORWARDED: NodeJS.Signals[] = ['SIGTERM', 'SIGHUP', 'SIGINT', 'SIGUSR2']

export const run: Command = {
  name: 'run',
  summary: "run a command with an environment's variables",
  help: `Usage: envkeep run [<vault> <environment>] [options] -- <command> [args...]

Reads the environment's variables and runs the command with them added to its
environment (they override variables of the same name, unless --no-override).
Without <vault> <environment>, the folder's link (.envkeep.json). The command's exit
code passes through; if it is killed by a signal, envkeep ends with the same
signal. SIGTERM, SIGHUP and SIGUSR2 sent to envkeep are passed to the command,
and SIGINT too when there is no terminal (at a terminal, Ctrl-C reaches the
command directly). A command that cannot be found exits 127, one that cannot
be started 126.

Options:
  --mask           replace every value of 6 or more characters in the command's
                   output with *****; on by default when CI=true or ENVKEEP_MASK=1
  --no-mask        pass the output through untouched
  --only N1,N2     give the command only these variables
  --no-override    keep variables already set in the environment
${FALLBACK_HELP}
${BASE_URL_HELP}
  -h, --help       show this help`,
  options: {
    mask: { type: 'boolean' },
    'no-mask': { type: 'boolean' },
    only: { type: 'string' },
    'no-override': { type: 'boolean' },
    ...FALLBACK_OPTIONS,
  },
  positionals: [0, 2],
  takesRest: true,
  async run(ctx, { values, positionals, rest }) {
    if (rest.length === 0) throw usageError('no command to run', 'put it after --: envkeep run app development -- npm start')
    const target = await resolveTarget(ctx, values, pairOf(positionals, 'run'), 'usage: envkeep run <vault> <environment> -- <command>')
    const set = await readEnvironment(ctx, target, { fallback: fallbackOptions(values, target) })
    if (set.overridden) ctx.err(overriddenNotice(set.overridden))
    let variables = set.variables
    if (typeof values.only === 'string') {
      const only = values.only
        .split(',')
        .map((n) => n.trim())
        .filter((n) => n !== '')
      const missing = only.filter((n) => !(n in variables))
      if (missing.length > 0) {
        throw usageError(`--only names ${missing.map((n) => `"${n}"`).join(', ')}, not in ${set.environment}${didYouMean(missing[0]!, Object.keys(variables))}`)
      }
      variables = Object.fromEntries(only.map((n) => [n, variables[n]!]))
    }
    const env: Record<string, string> = {}
    for (const [k, v] of Object.entries(ctx.deps.env)) if (v !== undefined) env[k] = v
    for (const [k, v] of Object.entries(variables)) if (!(values['no-override'] === true && env[k] !== undefined)) env[k] = v
    const mask = values['no-mask'] === true ? false : values.mask === true || ctx.deps.env.ENVKEEP_MASK === '1' || ctx.deps.env.CI === 'true'
    const secrets = Object.values(variables).filter((v) => v.length >= 6)

    const [command, ...args] = rest as [string, ...string[]]
    const child = spawn(command, args, { stdio: mask ? ['inherit', 'pipe', 'pipe'] : 'inherit', env, cwd: ctx.deps.cwd })
    const piped = mask ? [pipeMasked(child.stdout!, ctx.deps.stdout, secrets), pipeMasked(child.stderr!, ctx.deps.stderr, secrets)] : []
    const handlers = new Map<NodeJS.Signals, () => void>()
    for (const sig of FORWARDED) {
      const h = sig === 'SIGINT' && ctx.deps.isTTY ? () => {} : () => void child.kill(sig)
      handlers.set(sig, h)
      process.on(sig, h)
    }
    try {
      const outcome = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve, reject) => {
        child.once('error', reject)
        child.once('exit', (code, signal) => resolve({ code, signal }))
      })
      await Promise.all(piped)
      if (outcome.signal) {
        for (const [sig, h] of handlers) process.off(sig, h)
        handlers.clear()
        ctx.deps.raiseSignal(outcome.signal)
        return 128 + (constants.signals[outcome.signal] ?? 0)
      }
      return outcome.code ?? 1
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      if (code === 'ENOENT') throw new CliError(`command not found: ${command}`, { exitCode: 127, cause: err })
      throw new CliError(`could not start ${command} (${code ?? 'error'})`, { exitCode: 126, cause: err })
    } finally {
      for (const [sig, h] of handlers) process.off(sig, h)
    }
  },
}

import { spawn } from 'node:child_process'
import { constants } from 'node:os'
import { BASE_URL_HELP, type Command } from '../command.js'
import { CliError, usageError } from '../errors.js'
import { readEnvironment } from './pull.js'

const FORWARDED: NodeJS.Signals[] = ['SIGTERM', 'SIGHUP', 'SIGINT', 'SIGUSR2']

export const run: Command = {
  name: 'run',
  summary: "run a command with an environment's variables",
  help: `Usage: envkeep run <vault> <environment> [--base-url URL] -- <command> [args...]

Reads the environment's variables and runs the command with them added to its
environment (they override variables of the same name). The command's exit
code passes through; if it is killed by a signal, envkeep ends with the same
signal. SIGTERM, SIGHUP and SIGUSR2 sent to envkeep are passed to the command,
and SIGINT too when there is no terminal (at a terminal, Ctrl-C reaches the
command directly). A command that cannot be found exits 127, one that cannot
be started 126.

Options:
${BASE_URL_HELP}
  -h, --help       show this help`,
  options: {},
  positionals: [2, 2],
  takesRest: true,
  async run(ctx, { values, positionals, rest }) {
    if (rest.length === 0) throw usageError('no command to run', 'put it after --: envkeep run app development -- npm start')
    const set = await readEnvironment(ctx, values['base-url'] as string | undefined, positionals[0]!, positionals[1]!)
    const env: Record<string, string> = {}
    for (const [k, v] of Object.entries(ctx.deps.env)) if (v !== undefined) env[k] = v
    Object.assign(env, set.variables)

    const [command, ...args] = rest as [string, ...string[]]
    const child = spawn(command, args, { stdio: 'inherit', env, cwd: ctx.deps.cwd })
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

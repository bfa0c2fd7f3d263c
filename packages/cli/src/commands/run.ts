import { BASE_URL_HELP, type Command } from '../command.js'
import { CliError, usageError } from '../errors.js'
import { NOT_MODIFIED, overriddenNotice, readEnvironment, type VariableSet } from './pull.js'
import { runWatching, watchSettings } from './run-watch.js'
import { fallbackOptions, FALLBACK_HELP, FALLBACK_OPTIONS } from '../fallback.js'
import { maskedSecrets } from '../mask.js'
import { endAs, forwardSignals, startChild, startFailure } from './child.js'
import { allowedNames, childEnvironment, heldBackNote } from '../child-env.js'
import { didYouMean } from '../suggest.js'
import { pairOf, resolveTarget } from '../target.js'

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
  --watch          restart the command when the environment's values change: checks
                   every --interval seconds (default and least 10) with the version
                   it has (the server answers "not modified" without opening a value,
                   logged as a read); a line names what changed, never a value
  --interval S     seconds between checks with --watch (at least 10)
  --signal SIG     the signal that ends the command for a restart (default SIGTERM);
                   SIGKILL follows after --grace seconds (default 10)
  --allow NAME     give the command NAME although it makes programs run code
                   (repeat it, or N1,N2); also the names listed under "allow" in
                   the folder's .envkeep.json

Variables that make programs, interpreters or the loader run code (NODE_OPTIONS,
BASH_ENV, LD_PRELOAD, PYTHONSTARTUP, PERL5OPT, RUBYOPT, JAVA_TOOL_OPTIONS,
DYLD_*, GIT_*, PATH, ENVKEEP_*, …) are held back unless allowed by name: anyone
who may change the vault could otherwise run code on this machine. envkeep names
those it held back on stderr. ENVKEEP_OIDC_TOKEN is not passed to the command.
${FALLBACK_HELP}
${BASE_URL_HELP}
  -h, --help       show this help`,
  options: {
    mask: { type: 'boolean' },
    'no-mask': { type: 'boolean' },
    only: { type: 'string' },
    'no-override': { type: 'boolean' },
    allow: { type: 'string', multiple: true },
    watch: { type: 'boolean' },
    interval: { type: 'string' },
    signal: { type: 'string' },
    grace: { type: 'string' },
    ...FALLBACK_OPTIONS,
  },
  positionals: [0, 2],
  takesRest: true,
  async run(ctx, { values, positionals, rest }) {
    if (rest.length === 0) throw usageError('no command to run', 'put it after --: envkeep run app development -- npm start')
    const target = await resolveTarget(ctx, values, pairOf(positionals, 'run'), 'usage: envkeep run <vault> <environment> -- <command>')
    const watching = values.watch === true ? watchSettings(values) : null
    const read = watching
      ? await readEnvironment(ctx, target, { ifTag: 'none' })
      : await readEnvironment(ctx, target, { fallback: fallbackOptions(values, target) })
    if (read === NOT_MODIFIED) throw new CliError(`could not read ${target.environment}: the server answered "not modified" to a first read`)
    const set = read
    if (set.overridden) ctx.err(overriddenNotice(set.overridden))
    const only =
      typeof values.only === 'string'
        ? values.only
            .split(',')
            .map((n) => n.trim())
            .filter((n) => n !== '')
        : null
    if (only) {
      const missing = only.filter((n) => !(n in set.variables))
      if (missing.length > 0) {
        throw usageError(
          `--only names ${missing.map((n) => `"${n}"`).join(', ')}, not in ${set.environment}${didYouMean(missing[0]!, Object.keys(set.variables))}`,
        )
      }
    }
    const allow = [...allowedNames(values.allow), ...target.allow]
    /** The command's environment, the names held back and the values to mask, from one read (again at each restart of --watch). */
    const prepare = (from: VariableSet) => {
      const variables = only ? Object.fromEntries(only.filter((n) => Object.hasOwn(from.variables, n)).map((n) => [n, from.variables[n]!])) : from.variables
      const { env, heldBack } = childEnvironment(ctx.deps.env, variables, { override: values['no-override'] !== true, allow })
      return { env, heldBack, secrets: maskedSecrets(Object.values(variables)) }
    }
    const { env, heldBack, secrets } = prepare(set)
    if (heldBack.length > 0) {
      ctx.err(`${ctx.paint.yellow('note:')} ${heldBackNote(heldBack)}\n`)
    }
    const mask = values['no-mask'] === true ? false : values.mask === true || ctx.deps.env.ENVKEEP_MASK === '1' || ctx.deps.env.CI === 'true'

    const [command, ...args] = rest as [string, ...string[]]
    if (watching) return runWatching(ctx, target, set, { ...watching, prepare, mask, command, args })
    const started = startChild(ctx, { command, args, env, mask, secrets })
    const stop = forwardSignals(ctx, () => started.child)
    try {
      return endAs(ctx, await started.exited, stop)
    } catch (err) {
      throw startFailure(command, err)
    } finally {
      stop()
    }
  },
}

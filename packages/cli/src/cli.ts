import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { parseArgs } from 'node:util'
import type { Command, Parsed } from './command.js'
import { login } from './commands/login.js'
import { logout } from './commands/logout.js'
import { pull } from './commands/pull.js'
import { push } from './commands/push.js'
import { run } from './commands/run.js'
import { status } from './commands/status.js'
import { vaults } from './commands/vaults.js'
import { completionCommand } from './commands/completion.js'
import { diff } from './commands/diff.js'
import { envs } from './commands/envs.js'
import { fallback } from './commands/fallback.js'
import { get, set } from './commands/get-set.js'
import { unset } from './commands/personal.js'
import { link, unlink } from './commands/link.js'
import { open } from './commands/open.js'
import { mcp } from './commands/mcp.js'
import { whoami } from './commands/whoami.js'
import { didYouMean } from './suggest.js'
import { createContext, type CliDeps } from './context.js'
import { CliError, createPaint, renderError, usageError } from './errors.js'
import { EXIT } from './exit-codes.js'

export type { CliDeps } from './context.js'
export { EXIT } from './exit-codes.js'

export const COMMANDS: readonly Command[] = [
  login,
  logout,
  whoami,
  vaults,
  envs,
  link,
  unlink,
  pull,
  run,
  get,
  push,
  set,
  unset,
  diff,
  status,
  open,
  mcp,
  fallback,
  completionCommand(() => COMMANDS),
]

function version(): string {
  const build = (globalThis as { __envkeepBuild?: { version: string; commit: string } }).__envkeepBuild
  if (build) return `${build.version} (commit ${build.commit})`
  try {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version?: string }
    return pkg.version ?? 'unknown'
  } catch {
    return 'unknown'
  }
}

const MAIN_HELP = `envkeep: the command-line client of an envkeep server

Usage: envkeep <command> [options]

Commands:
${COMMANDS.map((c) => `  ${c.name.padEnd(10)} ${c.summary}`).join('\n')}

Run envkeep <command> --help for a command's options. envkeep --version prints the
version. In a folder linked with envkeep link, <vault> <environment> may be left
out (--verbose says which .envkeep.json was used).

Environment:
  ENVKEEP_BASE_URL     the server, when --base-url is not given (else the last login's)
  ENVKEEP_CONFIG_DIR   where sign-ins are kept (else $XDG_CONFIG_HOME/envkeep, else ~/.config/envkeep)
  ENVKEEP_ALLOW_HTTP=1 allow plain http to a server that is not on this machine
  NO_COLOR             no colours

Exit codes: 0 success, 1 failure, 2 bad usage, 4 needs sign-in (run prints its command's code).
`

/**
 * Opens a URL without a shell: the URL never becomes part of a command line. Rejects when no
 * browser can start: no display (Linux and the BSDs), or no opener program.
 */
export async function defaultOpenBrowser(url: string, env: Readonly<Record<string, string | undefined>> = process.env): Promise<void> {
  const [cmd, args] =
    process.platform === 'darwin' ? ['open', [url]] : process.platform === 'win32' ? ['rundll32', ['url.dll,FileProtocolHandler', url]] : ['xdg-open', [url]]
  if (process.platform !== 'darwin' && process.platform !== 'win32' && !env.DISPLAY && !env.WAYLAND_DISPLAY) throw new Error('no display')
  await new Promise<void>((resolve, reject) => {
    const child = spawn(cmd as string, args as string[], { stdio: 'ignore', detached: true })
    child.once('error', reject)
    child.once('spawn', () => {
      child.unref()
      resolve()
    })
  })
}

/** `envkeep pull … | head` closes the pipe early: that is not a failure worth a stack trace. */
function ignoreEpipe(stream: NodeJS.WriteStream): NodeJS.WriteStream {
  if (stream.listenerCount('error') === 0) {
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE') throw err
    })
  }
  return stream
}

export function defaultDeps(): CliDeps {
  return {
    env: process.env,
    stdin: process.stdin,
    stdout: ignoreEpipe(process.stdout),
    stderr: ignoreEpipe(process.stderr),
    fetch: globalThis.fetch,
    now: () => new Date(),
    sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
    openBrowser: (url) => defaultOpenBrowser(url),
    isTTY: Boolean(process.stdin.isTTY && process.stderr.isTTY),
    cwd: process.cwd(),
    homedir: homedir(),
    timeoutMs: 30_000,
    loginTimeoutMs: 5 * 60_000,
    pollIntervalMs: 3_000,
    raiseSignal: (sig) => {
      // Listeners (ours, or signal-exit's from proper-lockfile) would turn the signal into a
      // handled event; without them the default action ends the process with that signal.
      process.removeAllListeners(sig)
      process.kill(process.pid, sig)
    },
  }
}

function parse(cmd: Command, argv: string[]): Parsed {
  let args = argv
  let rest: string[] = []
  if (cmd.takesRest) {
    const dd = argv.indexOf('--')
    if (dd !== -1) {
      args = argv.slice(0, dd)
      rest = argv.slice(dd + 1)
    }
  }
  let parsed: { values: Record<string, unknown>; positionals: string[] }
  try {
    parsed = parseArgs({
      args,
      options: { ...cmd.options, help: { type: 'boolean', short: 'h' }, 'base-url': { type: 'string' }, verbose: { type: 'boolean' } },
      allowPositionals: true,
      strict: true,
    })
  } catch (err) {
    throw parseFailure(cmd, err as Error & { code?: string })
  }
  return { values: parsed.values as Parsed['values'], positionals: parsed.positionals, rest }
}

/** Node's parser errors, said in our own words. */
function parseFailure(cmd: Command, err: Error & { code?: string }) {
  const options = [...Object.keys(cmd.options), 'base-url', 'help', 'verbose'].map((o) => `--${o}`).sort()
  const raw = err.message
  const see = `see: envkeep ${cmd.name} --help`
  const quoted = /'(-{1,2}[^' ]+)/.exec(raw)?.[1] ?? ''
  if (err.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    const name = quoted.split('=')[0]!
    return usageError(`${cmd.name}: unknown option ${name.slice(0, 40)}${didYouMean(name, options, '')}`, `options of ${cmd.name}: ${options.join(', ')}`)
  }
  if (err.code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
    const name = /(--[a-z][a-z-]*)/.exec(raw)?.[1] ?? quoted
    return /argument missing/.test(raw) ? usageError(`${cmd.name}: ${name} needs a value`, see) : usageError(`${cmd.name}: ${name} takes no value`, see)
  }
  if (err.code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL') return usageError(`${cmd.name}: too many arguments`, see)
  return usageError(`${cmd.name}: the arguments could not be read`, see)
}

export interface Cli {
  /** Runs one command line; resolves with the exit code (never calls process.exit). */
  run(argv: readonly string[]): Promise<number>
}

/** The CLI with its outside world injected; `bin.ts` passes nothing and gets the real one. */
export function buildCli(overrides: Partial<CliDeps> = {}): Cli {
  const deps: CliDeps = { ...defaultDeps(), ...overrides }
  return {
    async run(argvIn) {
      const argv = [...argvIn]
      const ctx = createContext(deps)
      try {
        const first = argv[0]
        if (first === undefined || first === '--help' || first === '-h' || first === 'help') {
          const topic = first === 'help' ? COMMANDS.find((c) => c.name === argv[1]) : undefined
          ctx.out(topic ? `${topic.help}\n` : MAIN_HELP)
          return first === undefined ? EXIT.usage : EXIT.ok
        }
        if (first === '--version' || first === '-V') {
          ctx.out(`${version()}\n`)
          return EXIT.ok
        }
        const cmd = COMMANDS.find((c) => c.name === first)
        if (!cmd) {
          const names = COMMANDS.map((c) => c.name)
          throw usageError(`unknown command "${first.slice(0, 40)}"${didYouMean(first, names)}`, `commands: ${names.join(', ')} (envkeep --help)`)
        }
        const parsed = parse(cmd, argv.slice(1))
        if (parsed.values.help === true) {
          ctx.out(`${cmd.help}\n`)
          return EXIT.ok
        }
        const [min, max] = cmd.positionals
        if (parsed.positionals.length < min || parsed.positionals.length > max) {
          const extra = cmd.takesRest && parsed.positionals.length > max ? ' (put the command after --)' : ''
          throw usageError(`${cmd.name}: wrong number of arguments${extra}`, cmd.help.split('\n')[0])
        }
        return await cmd.run(ctx, parsed)
      } catch (err) {
        if (err instanceof CliError) {
          ctx.err(renderError(err, ctx.paint))
          return err.exitCode
        }
        // A bug: say where, never dump objects that could hold a value or token.
        const e = err as Error
        const at = e?.stack?.split('\n')[1]?.trim() ?? ''
        ctx.err(renderError(new CliError(`internal error (${e?.name ?? 'Error'}) ${at}`.trim(), { hint: 'please report it' }), createPaint(false)))
        return EXIT.failure
      }
    },
  }
}

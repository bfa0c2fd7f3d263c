import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { StorageError } from '@envkeep/env-api-plugin'
import { loadConfig, SETTINGS, UsageError } from './config.js'
import { migrateCommand } from './commands/migrate.js'
import { KeyFileError } from './keyring-file.js'
import { adminCiAdd, adminCiList, adminCiRemove } from './commands/admin-ci.js'
import { adminEnvCreate } from './commands/admin-env.js'
import { adminMemberAdd, adminMemberRemove } from './commands/admin-member.js'
import { adminRotateDataKeys } from './commands/admin-rotate-data-keys.js'
import { adminRotateMasterKey } from './commands/admin-rotate-master-key.js'
import { adminSigninsRevoke } from './commands/admin-signins.js'
import { adminLoginLink, adminUserCreate, adminUserResetFactors } from './commands/admin-user.js'
import { adminHistory, adminRestore } from './commands/admin-history.js'
import { adminVarList, adminVarSet } from './commands/admin-var.js'
import { adminAudit, adminVaultCreate } from './commands/admin-vault.js'
import { CommandFailure, EXIT_FAILURE, EXIT_OK, EXIT_USAGE, UsageFailure, type CliDeps, type CommandContext } from './commands/context.js'
import { initCommand } from './commands/init.js'
import { startCommand } from './commands/start.js'
import { healthcheckCommand } from './commands/healthcheck.js'
import { adminAuditExport } from './commands/admin-audit-export.js'
import { adminBackup, adminBackupRestore, adminBackupVerify } from './commands/admin-backup.js'

export type { CliDeps } from './commands/context.js'

interface CommandSpec {
  readonly words: readonly string[]
  readonly usage: string
  readonly summary: string
  /** flags besides the common ones */
  readonly strings?: readonly string[]
  readonly booleans?: readonly string[]
  readonly positionals?: number
  readonly run: (ctx: CommandContext) => Promise<number>
}

const SERVER_FLAGS = ['host', 'port', 'base-url']

const COMMANDS: readonly CommandSpec[] = [
  {
    words: ['init'],
    usage: 'init [--data-dir D]',
    summary: 'create the data directory, the database and a master key file (0600)',
    strings: SERVER_FLAGS,
    run: initCommand,
  },
  {
    words: ['start'],
    usage: 'start [--host H] [--port P] [--data-dir D] [--base-url U]',
    summary: 'serve (runs init first when the data directory does not exist yet)',
    strings: SERVER_FLAGS,
    run: startCommand,
  },
  {
    words: ['healthcheck'],
    usage: 'healthcheck [--url U]',
    summary: "exit 0 when the server's /readyz answers 200, else 1 with its reason (for container health checks; U defaults to this host and port)",
    strings: ['url', ...SERVER_FLAGS],
    run: healthcheckCommand,
  },
  {
    words: ['admin', 'user', 'create'],
    usage: 'admin user create --email E --name N --password-stdin',
    summary: 'create an account (password read from stdin)',
    strings: ['email', 'name'],
    booleans: ['password-stdin'],
    run: adminUserCreate,
  },
  {
    words: ['admin', 'user', 'reset-factors'],
    usage: 'admin user reset-factors --email E',
    summary: 'remove every second factor and recovery code of an account (a lost phone), ending its web sessions; logged',
    strings: ['email'],
    run: adminUserResetFactors,
  },
  {
    words: ['admin', 'login-link'],
    usage: 'admin login-link --email E',
    summary: 'print a one-time sign-in link for an account (break-glass when password sign-in is off); logged',
    strings: ['email'],
    run: adminLoginLink,
  },
  {
    words: ['admin', 'vault', 'create'],
    usage: 'admin vault create --name N --owner EMAIL',
    summary: 'create a vault with development, preview and production (owners only)',
    strings: ['name', 'owner'],
    run: adminVaultCreate,
  },
  {
    words: ['admin', 'member', 'add'],
    usage: 'admin member add --vault V --email E --role owner|editor|viewer',
    summary: 'add a member to a vault, or change their role',
    strings: ['vault', 'email', 'role'],
    run: adminMemberAdd,
  },
  {
    words: ['admin', 'member', 'remove'],
    usage: 'admin member remove --vault V --email E',
    summary: 'remove a member from a vault (never its last owner)',
    strings: ['vault', 'email'],
    run: adminMemberRemove,
  },
  {
    words: ['admin', 'env', 'create'],
    usage: 'admin env create --vault V --name N [--owners-only]',
    summary: 'add an environment to a vault',
    strings: ['vault', 'name'],
    booleans: ['owners-only'],
    run: adminEnvCreate,
  },
  {
    words: ['admin', 'var', 'set'],
    usage: 'admin var set --vault V --env E NAME [--ref ENVIRONMENT.NAME]',
    summary: "set a variable; the value is read from stdin (or, with --ref, a reference to another environment's variable)",
    strings: ['vault', 'env', 'ref'],
    positionals: 1,
    run: adminVarSet,
  },
  {
    words: ['admin', 'var', 'list'],
    usage: 'admin var list --vault V --env E',
    summary: 'list the variable names of an environment (never values)',
    strings: ['vault', 'env'],
    run: adminVarList,
  },
  {
    words: ['admin', 'audit', 'export'],
    usage: 'admin audit export --since S [--until U] [--vault V]',
    summary: "the audit stream's JSON Lines for a period (S, U: a date, a time, or 30m/24h/7d back), every vault or one; names, never values",
    strings: ['since', 'until', 'vault'],
    run: adminAuditExport,
  },
  {
    words: ['admin', 'audit'],
    usage: 'admin audit',
    summary: 'the server-level audit log: deleted vaults, and sign-in events (success, failure, factors, links), newest first',
    strings: [],
    run: adminAudit,
  },
  {
    words: ['admin', 'history'],
    usage: 'admin history --vault V --env E',
    summary: "an environment's change sets, newest first: when, who, how, names added, changed and deleted (never values)",
    strings: ['vault', 'env'],
    run: adminHistory,
  },
  {
    words: ['admin', 'restore'],
    usage: 'admin restore --vault V --env E --change ID',
    summary: 'every variable of the environment back to its value right after change ID (from admin history), as one new change',
    strings: ['vault', 'env', 'change'],
    run: adminRestore,
  },
  {
    words: ['admin', 'ci', 'add'],
    usage:
      'admin ci add --vault V --name N --issuer URL|github|gitlab --audience A --subject PATTERN --role editor|owner [--environments a,b] [--claims k=v,...]',
    summary: 'let CI runs whose OIDC identity token matches read the vault (no stored secret); * in --subject matches any run of characters',
    strings: ['vault', 'name', 'issuer', 'audience', 'subject', 'role', 'environments', 'claims'],
    run: adminCiAdd,
  },
  { words: ['admin', 'ci', 'list'], usage: 'admin ci list --vault V', summary: 'list the CI identities of a vault', strings: ['vault'], run: adminCiList },
  {
    words: ['admin', 'ci', 'remove'],
    usage: 'admin ci remove --vault V --name N',
    summary: 'remove a CI identity; its live tokens stop at once',
    strings: ['vault', 'name'],
    run: adminCiRemove,
  },
  {
    words: ['admin', 'rotate-master-key'],
    usage: 'admin rotate-master-key',
    summary: 'new master key; rewraps the vault keys, values untouched; the old key file is kept as a backup',
    run: adminRotateMasterKey,
  },
  {
    words: ['admin', 'rotate-data-keys'],
    usage: 'admin rotate-data-keys [--from VAULT_ID]',
    summary: 'new data keys; every stored value (pushes included) sealed again, vault by vault, online; --from resumes',
    strings: ['from'],
    run: adminRotateDataKeys,
  },
  {
    words: ['admin', 'backup', 'verify'],
    usage: 'admin backup verify FILE [--key-file K]',
    summary: 'check a backup (checksum, counts, signature) and, with the master key, open every sealed value in it',
    strings: ['key-file'],
    positionals: 1,
    run: adminBackupVerify,
  },
  {
    words: ['admin', 'backup', 'restore'],
    usage: 'admin backup restore FILE --data-dir NEW | --database-url postgres://… [--key-file K]',
    summary: 'restore a backup into a new SQLite data directory or an empty PostgreSQL database (either, whatever the backup came from)',
    strings: ['key-file'],
    positionals: 1,
    run: adminBackupRestore,
  },
  {
    words: ['admin', 'backup'],
    usage: 'admin backup --to FILE',
    summary: 'a consistent copy while the server runs (values still sealed, with a manifest and checksum); the master key is not in it',
    strings: ['to'],
    run: adminBackup,
  },
  {
    words: ['migrate'],
    usage: 'migrate --to postgres://… [--data-dir D]',
    summary: 'copy the SQLite data directory into an empty PostgreSQL database (values stay sealed, sign-ins stay valid); counts checked',
    strings: ['to'],
    run: migrateCommand,
  },
  {
    words: ['admin', 'signins', 'revoke'],
    usage: 'admin signins revoke --email E',
    summary: "revoke a person's CLI sign-ins and end their web sessions",
    strings: ['email'],
    run: adminSigninsRevoke,
  },
]

/** What a single-executable build (scripts/release) says about itself, else undefined. */
function buildInfo(): { version: string; commit: string; addonsNote: string | null } | undefined {
  return (globalThis as { __envkeepBuild?: { version: string; commit: string; addonsNote: string | null } }).__envkeepBuild
}

/** `envkeep-server 0.1.0`, with the commit in a release build. */
export function versionText(): string {
  const b = buildInfo()
  if (b) return `envkeep-server ${b.version} (commit ${b.commit})`
  try {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version?: string }
    return `envkeep-server ${pkg.version ?? 'unknown'}`
  } catch {
    return 'envkeep-server (version unknown)'
  }
}

export function helpText(): string {
  const width = Math.max(...SETTINGS.map((s) => (s.flag ? `${s.flag}, ${s.env}` : s.env).length))
  const lines = [
    'envkeep-server: the self-hosting envkeep server (SQLite, local accounts, web pages)',
    '',
    'Usage: envkeep-server <command> [options]',
    '',
    'Commands:',
    ...COMMANDS.map((c) => `  ${c.usage}\n      ${c.summary}`),
    '',
    'Every admin command works on the data directory (safe while the server runs), takes',
    '--data-dir, --database-url and --json, and exits 0 ok, 1 failure, 2 usage. A master key file that other',
    'users can read is refused (as ssh refuses such a private key): chmod 600 it, or pass',
    '--allow-insecure-key-file to any command.',
    '',
    'Settings (flags win over environment variables). Each secret setting (ENVKEEP_DATABASE_URL,',
    'ENVKEEP_SMTP_URL, ENVKEEP_OIDC_CLIENT_SECRET, ENVKEEP_AUDIT_STREAM_SECRET) is also read from the',
    'file its <NAME>_FILE names; the master key from ENVKEEP_MASTER_KEY_FILE. At start the server logs',
    'the settings in effect (secrets redacted) and warns about unknown ENVKEEP_ names.',
    ...SETTINGS.map((s) => `  ${(s.flag ? `${s.flag}, ${s.env}` : s.env).padEnd(width)}  ${s.meaning} (default ${s.default})`),
    '',
    'First run: `start` on a data directory that does not exist yet runs `init` first: it',
    'creates the database and master.key (mode 0600) and logs a backup warning. On an',
    'existing data directory `start` never creates a key; without one, value routes answer',
    '503 not_configured. With no account yet, `start` prints a one-time setup link.',
    '',
    '--version prints the version (and, in a release build, the commit).',
    ...(buildInfo()?.addonsNote ? [buildInfo()!.addonsNote!] : []),
  ]
  return `${lines.join('\n')}\n`
}

/**
 * `admin ci --help` and the like: the leading words of `argv` when they name a group of
 * commands (`admin`, `admin user`, `admin vault`, …) rather than one command, else null.
 */
function findGroup(argv: readonly string[]): { words: string[]; commands: CommandSpec[] } | null {
  const words: string[] = []
  for (const a of argv) {
    if (a.startsWith('-') || a === 'help') break
    words.push(a)
  }
  if (words.length === 0) return null
  const commands = COMMANDS.filter((c) => c.words.length > words.length && words.every((w, i) => c.words[i] === w))
  return commands.length > 0 ? { words, commands } : null
}

function groupHelpText(words: readonly string[], commands: readonly CommandSpec[]): string {
  const lines = [
    `envkeep-server ${words.join(' ')}: ${commands.length} command${commands.length === 1 ? '' : 's'}`,
    '',
    ...commands.map((c) => `  ${c.usage}\n      ${c.summary}`),
    '',
    'Each takes --data-dir, --database-url and --json; envkeep-server --help shows the settings.',
  ]
  return `${lines.join('\n')}\n`
}

function findCommand(argv: readonly string[]): { spec: CommandSpec; rest: string[] } | null {
  for (const spec of COMMANDS) {
    if (spec.words.every((w, i) => argv[i] === w)) return { spec, rest: argv.slice(spec.words.length) }
  }
  return null
}

/**
 * The command line as a function of its dependencies: `run(argv)` resolves
 * to the exit code (0 ok, 1 failure, 2 usage) and never exits the process.
 */
export function buildCli(deps: CliDeps): { run(argv: readonly string[]): Promise<number> } {
  const say = (text: string) => deps.stderr.write(`${text}\n`)
  return {
    async run(argv) {
      if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-v')) {
        deps.stdout.write(`${versionText()}\n`)
        return EXIT_OK
      }
      if (argv[0] === 'help' && argv.length > 1) {
        const group = findGroup(argv.slice(1))
        if (group) {
          deps.stdout.write(groupHelpText(group.words, group.commands))
          return EXIT_OK
        }
      }
      if (argv.length === 0 || argv[0] === 'help' || argv[0] === '--help' || argv[0] === '-h') {
        ;(argv.length === 0 ? deps.stderr : deps.stdout).write(helpText())
        return argv.length === 0 ? EXIT_USAGE : EXIT_OK
      }
      const found = findCommand(argv)
      const group = found ? null : findGroup(argv)
      if (group) {
        // a group of commands: its help, on stdout when asked for, else with the usage exit code
        const asked = argv.includes('--help') || argv.includes('-h') || argv.includes('help')
        ;(asked ? deps.stdout : deps.stderr).write(groupHelpText(group.words, group.commands))
        return asked ? EXIT_OK : EXIT_USAGE
      }
      if (!found) {
        say(`envkeep-server: unknown command "${argv.slice(0, 3).join(' ')}"; see envkeep-server --help`)
        return EXIT_USAGE
      }
      const { spec, rest } = found
      let json = false
      try {
        const options: Record<string, { type: 'string' | 'boolean' }> = {
          'data-dir': { type: 'string' },
          'database-url': { type: 'string' },
          'allow-insecure-key-file': { type: 'boolean' },
          json: { type: 'boolean' },
          help: { type: 'boolean' },
        }
        for (const s of spec.strings ?? []) options[s] = { type: 'string' }
        for (const b of spec.booleans ?? []) options[b] = { type: 'boolean' }
        let parsed: ReturnType<typeof parseArgs>
        try {
          parsed = parseArgs({ args: [...rest], options, allowPositionals: true, strict: true })
        } catch (err) {
          throw new UsageFailure((err as Error).message.split('\n')[0] ?? 'bad arguments')
        }
        const values = parsed.values as Record<string, string | boolean | undefined> // no option is `multiple`
        json = values.json === true
        if (values.help === true) {
          deps.stdout.write(`Usage: envkeep-server ${spec.usage}\n  ${spec.summary}\n`)
          return EXIT_OK
        }
        if (parsed.positionals.length !== (spec.positionals ?? 0)) throw new UsageFailure(`usage: envkeep-server ${spec.usage}`)
        const config = loadConfig(values, deps.env, deps.cwd)
        return await spec.run({
          deps,
          config,
          json,
          now: deps.now ?? (() => new Date()),
          args: parsed.positionals,
          flags: values,
        })
      } catch (err) {
        const usage = err instanceof UsageFailure || err instanceof UsageError || err instanceof KeyFileError
        // a database failure says its SQLSTATE (and at most a constraint's name): never a row
        const known = usage || err instanceof CommandFailure || err instanceof StorageError
        const message = known ? (err instanceof StorageError ? `the database failed: ${err.message}` : (err as Error).message) : 'an internal error occurred'
        if (!known) say(`envkeep-server: ${err instanceof Error ? `${err.name} ${err.stack?.split('\n')[1]?.trim() ?? ''}` : typeof err}`)
        say(`envkeep-server: ${message}`)
        if (json) deps.stdout.write(`${JSON.stringify({ ok: false, error: message })}\n`)
        return usage ? EXIT_USAGE : EXIT_FAILURE
      }
    },
  }
}

/** The process entry (bin.ts): real streams and signals, exit code set once the command ends. */
export async function runProcess(): Promise<void> {
  const cli = buildCli({ stdin: process.stdin, stdout: process.stdout, stderr: process.stderr, env: process.env, cwd: process.cwd() })
  process.exitCode = await cli.run(process.argv.slice(2))
}

export { EXIT_FAILURE, EXIT_OK, EXIT_USAGE }

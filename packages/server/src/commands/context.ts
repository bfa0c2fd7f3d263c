import { existsSync } from 'node:fs'
import type { Readable, Writable } from 'node:stream'
import { openStores, type Stores } from '../stores.js'
import { ApiError, createEnvkeepCore, DomainFailure, withFailuresAs, type Domain, type Keyring } from '@envkeep/env-api-plugin'
import type { Env, ServerConfig } from '../config.js'

/** Exit codes: 0 ok, 1 failure, 2 usage. */
export const EXIT_OK = 0
export const EXIT_FAILURE = 1
export const EXIT_USAGE = 2

/** What the CLI needs from the world; tests pass fakes. */
export interface CliDeps {
  readonly stdin: Readable
  readonly stdout: Writable
  readonly stderr: Writable
  readonly env: Env
  readonly cwd: string
  readonly now?: () => Date
  /** registers a handler for SIGTERM and SIGINT (`start`); default: process signals */
  readonly onShutdownSignal?: (handler: (signal: string) => void) => () => void
}

/** A command that failed for a reason a person can act on (exit 1). */
export class CommandFailure extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'CommandFailure'
  }
}

export interface CommandContext {
  readonly deps: CliDeps
  readonly config: ServerConfig
  readonly json: boolean
  readonly now: () => Date
  /** positional arguments after the command words */
  readonly args: readonly string[]
  readonly flags: Readonly<Record<string, string | boolean | undefined>>
}

/** Prints the result: one JSON line with --json, else the human sentence. */
export function report(ctx: CommandContext, human: string, data: Record<string, unknown>): number {
  ctx.deps.stdout.write(ctx.json ? `${JSON.stringify({ ok: true, ...data })}\n` : `${human}\n`)
  return EXIT_OK
}

/**
 * All of stdin as text, without one trailing newline. Bytes that are not UTF-8 (`0xFF`, a
 * CESU-8 surrogate) are refused (issue 25): decoding would store U+FFFD, not what was sent.
 */
export async function readStdin(stdin: Readable): Promise<string> {
  const chunks: Buffer[] = []
  for await (const c of stdin) chunks.push(typeof c === 'string' ? Buffer.from(c, 'utf8') : (c as Buffer))
  let text: string
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(Buffer.concat(chunks))
  } catch {
    throw new CommandFailure('stdin is not UTF-8 text; nothing was stored (send the value as UTF-8)')
  }
  return text.replace(/\r?\n$/, '')
}

export type OpenData = Stores

/**
 * Opens the data directory's database for an admin command. Safe while the
 * server runs: SQLite WAL lets readers and one writer share the file, and
 * the busy timeout waits for the server's short transactions.
 */
export async function openData(config: ServerConfig): Promise<OpenData> {
  if (!config.databaseUrl && !existsSync(config.databaseFile))
    throw new CommandFailure(`no envkeep database in ${config.dataDir}; run \`envkeep-server init\` first`)
  return openStores(config, { busyTimeoutMs: 10_000 })
}

export function requireString(ctx: CommandContext, flag: string): string {
  const v = ctx.flags[flag]
  if (typeof v !== 'string' || v.trim() === '') throw new UsageFailure(`--${flag} is required`)
  return v.trim()
}

/** A wrong command line (exit 2). */
export class UsageFailure extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'UsageFailure'
  }
}

/**
 * The plugin's domain layer for an admin command, from one core
 * (createEnvkeepCore) over the command's data: the same rules as the
 * pages, the server administrator as the actor (see ADMINISTRATOR), and
 * every refusal a CommandFailure (exit 1) with the domain's sentence.
 */
export function adminDomain(ctx: CommandContext, data: OpenData, keyring: Keyring | null = null): Domain {
  const core = createEnvkeepCore({
    storage: data.storage,
    keyring,
    now: ctx.now,
    importTtlMs: ctx.config.importTtlSeconds * 1000,
    historyDays: ctx.config.historyDays,
    plans: ctx.config.plans,
    ciAllowHttpLoopbackIssuers: ctx.config.ciAllowHttpLoopbackIssuers,
    allowPrivateWebhooks: ctx.config.webhookAllowPrivate,
    people: {
      async findPersonByEmail(email) {
        const a = await data.accounts.findAccountByEmail(email)
        return a ? { id: a.id, email: a.email, name: a.name } : null
      },
    },
  })
  return withFailuresAs(core.domain, (err) => (err instanceof DomainFailure || err instanceof ApiError ? new CommandFailure(err.message, { cause: err }) : err))
}

export async function requireAccount(data: OpenData, email: string) {
  const account = await data.accounts.findAccountByEmail(email)
  if (!account) throw new CommandFailure('no account with that email')
  return account
}

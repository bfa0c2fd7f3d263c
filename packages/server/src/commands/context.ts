import { existsSync } from 'node:fs'
import type { Readable, Writable } from 'node:stream'
import { createSqliteAccountStore, createSqliteStorage, type AccountStore, type SqliteStorage } from '@envkeep/storage-sqlite'
import type { AccessAction, AccessLogEntry, VaultAccess } from '@envkeep/env-api-plugin'
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

/** All of stdin as text, without one trailing newline. */
export async function readStdin(stdin: Readable): Promise<string> {
  const chunks: Buffer[] = []
  for await (const c of stdin) chunks.push(typeof c === 'string' ? Buffer.from(c, 'utf8') : (c as Buffer))
  return Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '')
}

export interface OpenData {
  readonly storage: SqliteStorage
  readonly accounts: AccountStore
  close(): Promise<void>
}

/**
 * Opens the data directory's database for an admin command. Safe while the
 * server runs: SQLite WAL lets readers and one writer share the file, and
 * the busy timeout waits for the server's short transactions.
 */
export async function openData(config: ServerConfig): Promise<OpenData> {
  if (!existsSync(config.databaseFile))
    throw new CommandFailure(`no envkeep database in ${config.dataDir}; run \`envkeep-server init\` first`)
  const storage = await createSqliteStorage({ filename: config.databaseFile, busyTimeoutMs: 10_000 })
  const accounts = createSqliteAccountStore(storage.database)
  return { storage, accounts, close: () => storage.close() }
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

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/**
 * A vault by id or by exact name, across every account (admins see all).
 * Fails when none or several match.
 */
export async function resolveVault(data: OpenData, v: string): Promise<VaultAccess> {
  const found = new Map<string, VaultAccess>()
  for (const account of await data.accounts.listAccounts()) {
    if (UUID_RE.test(v)) {
      const vault = await data.storage.getVault(v.toLowerCase(), account.id)
      if (vault) found.set(vault.id, vault)
    } else {
      for (const vault of await data.storage.findVaultsByName(v, account.id)) found.set(vault.id, vault)
    }
    if (UUID_RE.test(v) && found.size > 0) break
  }
  if (found.size === 0) throw new CommandFailure(`no vault with that id or name`)
  if (found.size > 1) throw new CommandFailure(`several vaults have that name; use the vault id: ${[...found.keys()].join(', ')}`)
  return [...found.values()][0]!
}

export async function requireAccount(data: OpenData, email: string) {
  const account = await data.accounts.findAccountByEmail(email)
  if (!account) throw new CommandFailure('no account with that email')
  return account
}

/** An access log entry for something done with an admin command. */
export function adminLog(
  vaultId: string,
  action: AccessAction,
  at: Date,
  environment: string | null,
  names: readonly string[],
): AccessLogEntry {
  return { vaultId, at, personId: null, signInId: null, clientId: 'envkeep-server', action, environment, names, address: null, subject: null, detail: null }
}

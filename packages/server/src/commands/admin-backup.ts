import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { resolve } from 'node:path'
import { createLocalKeyring } from '@envkeep/env-api-plugin'
import { createPostgresStorage } from '@envkeep/storage-postgres'
import { createSqliteStorage } from '@envkeep/storage-sqlite'
import { createPostgresAccountStore } from '../accounts/postgres-account-store.js'
import { createSqliteAccountStore } from '../accounts/sqlite-account-store.js'
import { readKeyFile } from '../keyring-file.js'
import { BackupError, createBackupWriter, keyIdOf, readBackup, type ReadResult } from '../ops/backup-file.js'
import { dumpDatabase, heldRows, loadDatabase, type Target } from '../ops/backup-db.js'
import { openEverything, type OpenedCounts } from '../ops/open-everything.js'
import { ensureAuditStreamTable } from '../ops/audit-stream.js'
import { CommandFailure, openData, report, requireString, UsageFailure, type CommandContext } from './context.js'

function serverVersion(): string {
  const build = (globalThis as { __envkeepBuild?: { version: string } }).__envkeepBuild
  if (build) return build.version
  try {
    return (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: string }).version ?? 'unknown'
  } catch {
    return 'unknown'
  }
}

/** The master key: --key-file, else ENVKEEP_MASTER_KEY, else the key file of the settings; null when there is none. */
function masterKey(ctx: CommandContext, o: { defaultFile: boolean }): Uint8Array | null {
  const f = ctx.flags['key-file']
  if (typeof f === 'string') {
    const k = readKeyFile(resolve(ctx.deps.cwd, f))
    if (!k) throw new CommandFailure(`no key file at ${f}`)
    return k.key
  }
  if (ctx.config.masterKeyFromEnv) return ctx.config.masterKeyFromEnv
  return o.defaultFile ? (readKeyFile(ctx.config.masterKeyFile)?.key ?? null) : null
}

function fail(err: unknown): never {
  if (err instanceof BackupError) throw new CommandFailure(err.message, { cause: err })
  throw err
}

const say = (ctx: CommandContext, line: string) => ctx.deps.stderr.write(`${line}\n`)

function countsLine(counts: Readonly<Record<string, number>>): string {
  const main = ['vaults', 'variables', 'imports', 'change_sets', 'access_log', 'accounts', 'sign_ins']
  return main
    .filter((t) => counts[t] !== undefined)
    .map((t) => `${t} ${counts[t]}`)
    .join(', ')
}

function openedLine(o: OpenedCounts): string {
  return `every sealed value opened: ${o.variables} variables, ${o.staged} values of pushes, ${o.history} history values, ${o.webhookSecrets} webhook secrets`
}

/**
 * `admin backup --to FILE`: every table, from one consistent snapshot taken while the server
 * runs and writes, values still sealed, into FILE (gzip JSON Lines, mode 0600) with its
 * manifest. The master key is not in it: keep the two apart.
 */
export async function adminBackup(ctx: CommandContext): Promise<number> {
  const to = resolve(ctx.deps.cwd, requireString(ctx, 'to'))
  if (existsSync(to)) throw new CommandFailure(`${to} exists; a backup never overwrites a file, choose another name`)
  const key = masterKey(ctx, { defaultFile: true })
  const data = await openData(ctx.config)
  try {
    const writer = createBackupWriter(
      to,
      { createdAt: ctx.now().toISOString(), source: data.kind, serverVersion: serverVersion(), keyId: key ? keyIdOf(key) : null },
      key,
    )
    let counts: Record<string, number>
    try {
      const database = (data.storage as unknown as { database: { sqlite?: unknown; db: unknown } }).database
      await dumpDatabase(data.kind === 'sqlite' ? { kind: 'sqlite', sqlite: database.sqlite as never } : { kind: 'postgres', db: database.db as never }, writer)
      counts = await writer.finish()
    } catch (err) {
      await writer.abort()
      throw err
    }
    if (!key) say(ctx, 'envkeep-server: no master key found: the backup has no key id and no signature (verify can check its checksum only)')
    return report(
      ctx,
      `backup written: ${to}\n  ${countsLine(counts)}\n  key id ${key ? keyIdOf(key) : '(none)'}: keep the master key apart from the backup, both are needed to restore`,
      { file: to, keyId: key ? keyIdOf(key) : null, tables: counts },
    )
  } finally {
    await data.close()
  }
}

/** Restores into a fresh in-memory SQLite database: the whole file is read, checked, and every row placed. */
async function intoMemory(path: string, key: Uint8Array | null) {
  const storage = await createSqliteStorage({ filename: ':memory:' })
  await createSqliteAccountStore(storage.database)
  await ensureAuditStreamTable(storage.database.db as never, 'sqlite')
  let result: ReadResult | null = null
  try {
    await loadDatabase({ kind: 'sqlite', sqlite: storage.database.sqlite }, async (loader) => {
      result = await readBackup(path, key, { table: (t, c) => loader.table(t, c), row: (_t, v) => loader.row(v) })
    })
  } catch (err) {
    await storage.close()
    fail(err)
  }
  return { storage, result: result as unknown as ReadResult }
}

/** `admin backup verify FILE [--key-file K]`: checks the file, and with the key opens every sealed value. */
export async function adminBackupVerify(ctx: CommandContext): Promise<number> {
  const path = resolve(ctx.deps.cwd, ctx.args[0]!)
  const key = masterKey(ctx, { defaultFile: true })
  const { storage, result } = await intoMemory(path, key)
  try {
    const h = result.header
    let opened: OpenedCounts | null = null
    if (key) {
      try {
        opened = await openEverything(storage, storage.database.db as never, createLocalKeyring(key))
      } catch (err) {
        throw new CommandFailure('a sealed value of the backup does not open with this master key: the backup or the key is not the right one', { cause: err })
      }
    }
    const lines = [
      `backup ${path}: intact (SHA-256 matches; every table holds the rows its manifest counts)`,
      `  written ${h.createdAt} from ${h.source} by envkeep-server ${h.serverVersion}; master key id ${h.keyId ?? '(none)'}`,
      `  ${countsLine(result.trailer.counts)}`,
      `  signature: ${result.signature === 'ok' ? 'matches under the master key given' : result.signature === 'unsigned' ? 'none (the backup was written without a key)' : 'not checked (no master key given)'}`,
      `  ${opened ? openedLine(opened) : 'values not opened: give the master key (--key-file, ENVKEEP_MASTER_KEY or the data directory’s master.key)'}`,
    ]
    return report(ctx, lines.join('\n'), { file: path, manifest: { ...h, counts: result.trailer.counts }, signature: result.signature, opened })
  } finally {
    await storage.close()
  }
}

/**
 * `admin backup restore FILE --data-dir NEW | --database-url URL`: checks the whole file
 * first, then copies it into an empty database in one transaction (all or nothing), then
 * opens every value with the key when one is given.
 */
export async function adminBackupRestore(ctx: CommandContext): Promise<number> {
  const path = resolve(ctx.deps.cwd, ctx.args[0]!)
  const toDir = typeof ctx.flags['data-dir'] === 'string'
  const toUrl = typeof ctx.flags['database-url'] === 'string'
  if (toDir === toUrl) throw new UsageFailure('give the target: --data-dir NEW (SQLite) or --database-url postgres://… (PostgreSQL), one of them')
  const key = masterKey(ctx, { defaultFile: false })
  const checked = await readBackup(path, key).catch(fail) // the whole file, before anything is written

  let createdDir = false
  let target: { t: Target; storage: Parameters<typeof openEverything>[0]; db: unknown; close(): Promise<void> }
  if (toDir) {
    const dir = ctx.config.dataDir
    if (existsSync(dir) && readdirSync(dir).length > 0)
      throw new CommandFailure(`${dir} is not empty; restore writes into a new (or empty) data directory only`)
    createdDir = !existsSync(dir)
    mkdirSync(dir, { recursive: true, mode: 0o700 })
    const s = await createSqliteStorage({ filename: ctx.config.databaseFile })
    await createSqliteAccountStore(s.database)
    await ensureAuditStreamTable(s.database.db as never, 'sqlite') // the audit stream's cursor travels with the data
    target = { t: { kind: 'sqlite', sqlite: s.database.sqlite }, storage: s, db: s.database.db, close: () => s.close() }
  } else {
    const s = await createPostgresStorage({ connectionString: ctx.config.databaseUrl!, pool: 2 }).catch((err: unknown) => {
      throw new CommandFailure(`cannot open the target database: ${(err as Error).message}`, { cause: err })
    })
    await createPostgresAccountStore(s.database)
    await ensureAuditStreamTable(s.database.db, 'postgres')
    target = { t: { kind: 'postgres', db: s.database.db }, storage: s, db: s.database.db, close: () => s.close() }
  }
  let ok = false
  try {
    const held = await heldRows(target.t)
    if (held.length > 0) throw new CommandFailure(`the target already holds envkeep data (${held.join(', ')}); restore writes into an empty database only`)
    const { counts, dropped } = await loadDatabase(target.t, async (loader) => {
      await readBackup(path, key, { table: (t, c) => loader.table(t, c), row: (_t, v) => loader.row(v) }).catch(fail)
    }).catch((err: unknown) => {
      if (err instanceof CommandFailure) throw err
      throw new CommandFailure(`the restore failed and wrote nothing: ${(err as Error).message}`, { cause: err })
    })
    let opened: OpenedCounts | null = null
    if (key) {
      try {
        opened = await openEverything(target.storage, target.db as never, createLocalKeyring(key))
      } catch (err) {
        throw new CommandFailure('the restore is complete, but a sealed value does not open with this master key: is it the key of the backup?', { cause: err })
      }
    }
    ok = true
    const where = toDir ? ctx.config.dataDir : 'the PostgreSQL database'
    const keyHint = toDir
      ? `put the master key (key id ${checked.header.keyId ?? 'unknown'}) in ${ctx.config.dataDir}/master.key (chmod 600) or set ENVKEEP_MASTER_KEY`
      : `start every server with ENVKEEP_DATABASE_URL set to it and the master key (key id ${checked.header.keyId ?? 'unknown'})`
    return report(
      ctx,
      [
        `restored into ${where}: ${countsLine(counts)}`,
        ...(dropped.length > 0 ? [`  left out (the target's schema has no such column): ${dropped.join(', ')}`] : []),
        `  ${opened ? openedLine(opened) : 'values not opened: no master key given (--key-file or ENVKEEP_MASTER_KEY)'}`,
        `  then ${keyHint}`,
      ].join('\n'),
      { tables: counts, dropped, opened, keyId: checked.header.keyId },
    )
  } finally {
    await target.close()
    if (!ok && createdDir) rmSync(ctx.config.dataDir, { recursive: true, force: true })
  }
}

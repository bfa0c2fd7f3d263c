import { chmodSync, mkdirSync, statSync } from 'node:fs'
import { openStores } from '../stores.js'
import type { ServerConfig } from '../config.js'
import { readKeyFile, writeNewKeyFile } from '../keyring-file.js'
import { report, type CommandContext } from './context.js'

export interface InitResult {
  /** the data directory did not exist and was made */
  readonly createdDir: boolean
  /** a new master key file was written (at `keyFile`) */
  readonly createdKey: boolean
  readonly keyFile: string | null
}

/**
 * Makes the data directory (0700), the database (migrated) and, unless the
 * key comes from ENVKEEP_MASTER_KEY or a file exists already, a new master
 * key file (0600). Never overwrites a key.
 */
export async function initDataDir(config: ServerConfig): Promise<InitResult> {
  let createdDir = false
  try {
    statSync(config.dataDir)
  } catch {
    mkdirSync(config.dataDir, { recursive: true, mode: 0o700 })
    createdDir = true
  }
  const stores = await openStores(config) // the schema (storage and the server's own tables), on either database
  await stores.close()
  // values are sealed, but names and the access log are not for others
  if (stores.kind === 'sqlite') chmodSync(config.databaseFile, 0o600)
  if (config.masterKeyFromEnv) return { createdDir, createdKey: false, keyFile: null }
  if (readKeyFile(config.masterKeyFile)) return { createdDir, createdKey: false, keyFile: config.masterKeyFile }
  writeNewKeyFile(config.masterKeyFile)
  return { createdDir, createdKey: true, keyFile: config.masterKeyFile }
}

export const BACKUP_WARNING = 'back it up somewhere safe and separate from the database: without it no variable value can ever be read again'

export async function initCommand(ctx: CommandContext): Promise<number> {
  const r = await initDataDir(ctx.config)
  const lines = [`envkeep data directory: ${ctx.config.dataDir}${r.createdDir ? ' (created)' : ''}`]
  if (r.createdKey) lines.push(`master key created: ${r.keyFile} (mode 0600); ${BACKUP_WARNING}`)
  else if (r.keyFile) lines.push(`master key file exists: ${r.keyFile} (kept as it is)`)
  else lines.push('master key: from ENVKEEP_MASTER_KEY (no key file written)')
  return report(ctx, lines.join('\n'), {
    dataDir: ctx.config.dataDir,
    createdDir: r.createdDir,
    createdKey: r.createdKey,
    keyFile: r.keyFile,
  })
}

import { randomBytes } from 'node:crypto'
import { existsSync, linkSync, renameSync, unlinkSync } from 'node:fs'
import { createLocalKeyring } from '@envkeep/env-api-plugin'
import { loadKeySource, writeNewKeyFile } from '../keyring-file.js'
import { CommandFailure, openData, report, type CommandContext } from './context.js'

/**
 * `admin rotate-master-key`: a new master key; every vault's data key is
 * unwrapped with the old key and wrapped with the new one in one
 * transaction (values are not touched). The old key file is kept as
 * `master.key.old-<time>`. A running server follows the key file.
 */
export async function adminRotateMasterKey(ctx: CommandContext): Promise<number> {
  const source = loadKeySource(ctx.config)
  if (source.kind === 'env')
    throw new CommandFailure('the master key comes from ENVKEEP_MASTER_KEY; rotation rewrites a key file, so use ENVKEEP_MASTER_KEY_FILE')
  if (source.kind === 'none') throw new CommandFailure(`there is no master key file at ${source.path}`)
  const path = source.path
  const next = `${path}.new`
  if (existsSync(next))
    throw new CommandFailure(`${next} exists from an earlier rotation that did not finish; check which key the data uses, then remove it`)
  const data = await openData(ctx.config)
  let backup: string
  let count: number
  try {
    const newKey = randomBytes(32)
    writeNewKeyFile(next, newKey)
    const newRing = createLocalKeyring(newKey)
    try {
      count = await data.storage.rewrapKeys(async (wrapped, vaultId) => newRing.wrap(await source.keyring.unwrap(wrapped, vaultId), vaultId))
    } catch (err) {
      unlinkSync(next) // nothing was rewrapped: the transaction rolled back
      throw new CommandFailure('could not rewrap the data keys with the new key; nothing changed', { cause: err })
    }
    newKey.fill(0)
    backup = `${path}.old-${ctx.now().toISOString().replace(/[:.]/g, '-')}`
    linkSync(path, backup) // keep the old key under a backup name
    renameSync(next, path) // atomic replace: the file always holds a whole key
  } finally {
    await data.close()
  }
  return report(ctx, `master key rotated: ${count} vault key(s) rewrapped; the old key is kept at ${backup}`, {
    rewrapped: count,
    keyFile: path,
    backup,
  })
}

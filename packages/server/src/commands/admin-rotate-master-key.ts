import { randomBytes } from 'node:crypto'
import { existsSync, linkSync, renameSync, unlinkSync } from 'node:fs'
import { ADMINISTRATOR, createLocalKeyring, type Keyring } from '@envkeep/env-api-plugin'
import { loadKeySource, readKeyFile, writeNewKeyFile } from '../keyring-file.js'
import { adminDomain, CommandFailure, openData, report, type CommandContext } from './context.js'

/**
 * `admin rotate-master-key`: a new master key; every vault's data key is
 * rewrapped under it (values are not touched). The old key file is kept as
 * `master.key.old-<time>`. A running server follows the key file.
 *
 * Safe while servers create vaults, with no lock held across the keyring:
 * each key is rewrapped by compare-and-set (a key made or changed meanwhile
 * is read again). Between the first pass and the swap of the key file a
 * server may still wrap a new key under the old key; so once the new file
 * is in place, passes repeat until one finds no key under the old key, and
 * every key is checked to open under the new one. A key wrapped before the
 * swap but stored after the last pass read its vault is wrapped again by
 * the server that made it (its keyring sees the new file: `isCurrent`).
 * A first pass that fails puts the keys it rewrapped back under the old key.
 */
/** Passes after the swap before the rotation gives up (each finds only keys made during the one before). */
const MAX_PASSES = 20

export async function adminRotateMasterKey(ctx: CommandContext): Promise<number> {
  const source = loadKeySource(ctx.config)
  if (source.kind === 'env')
    throw new CommandFailure('the master key comes from ENVKEEP_MASTER_KEY; rotation rewrites a key file, so use ENVKEEP_MASTER_KEY_FILE')
  if (source.kind === 'none') throw new CommandFailure(`there is no master key file at ${source.path}`)
  const path = source.path
  const next = `${path}.new`
  if (existsSync(next)) throw new CommandFailure(`${next} exists from an earlier rotation that did not finish; check which key the data uses, then remove it`)
  // the old key as it is now: the file keyring would follow the file to the new key
  const oldKey = readKeyFile(path)
  if (!oldKey) throw new CommandFailure(`there is no master key file at ${path}`)
  const oldRing = createLocalKeyring(oldKey.key)
  const data = await openData(ctx.config)
  let backup: string
  let count: number
  try {
    const newKey = randomBytes(32)
    writeNewKeyFile(next, newKey)
    const newRing = createLocalKeyring(newKey)
    newKey.fill(0)
    const toNewKey = rewrapUnder(oldRing, newRing)
    const domain = adminDomain(ctx, data)
    try {
      await domain.rewrapDataKeys(ADMINISTRATOR, toNewKey)
    } catch (err) {
      try {
        await domain.rewrapDataKeys(ADMINISTRATOR, backUnder(newRing, oldRing)) // the keys rewrapped so far go back
      } catch (back) {
        throw new CommandFailure(`could not rewrap the data keys with the new key, nor put them back: keep ${next}, fix the cause and run again`, {
          cause: back,
        })
      }
      unlinkSync(next) // every key is under the old key again
      throw new CommandFailure('could not rewrap the data keys with the new key; nothing changed', { cause: err })
    }
    backup = `${path}.old-${ctx.now().toISOString().replace(/[:.]/g, '-')}`
    linkSync(path, backup) // keep the old key under a backup name
    renameSync(next, path) // atomic replace: the file always holds a whole key
    try {
      // keys wrapped under the old key between the first pass and the swap, and the check:
      // passes until one finds no key under the old key
      let pass = await domain.rewrapDataKeys(ADMINISTRATOR, toNewKey)
      for (let passes = 1; pass.rewrapped > 0; passes++) {
        if (passes >= MAX_PASSES) throw new Error(`keys under the old key after ${passes} passes`)
        pass = await domain.rewrapDataKeys(ADMINISTRATOR, toNewKey)
      }
      count = pass.keys
    } catch (err) {
      throw new CommandFailure(
        `the new key is in place, but not every vault key could be checked under it; the old key is kept at ${backup}: run the rotation again`,
        { cause: err },
      )
    }
  } finally {
    await data.close()
  }
  return report(ctx, `master key rotated: ${count} vault key(s) rewrapped and checked; the old key is kept at ${backup}`, {
    rewrapped: count,
    keyFile: path,
    backup,
  })
}

/**
 * A data key as it must be under the new master key: kept if it opens
 * under it already, else opened with the old key and wrapped with the new
 * one. A key that opens under neither fails the pass (nothing changes).
 */
export function rewrapUnder(oldRing: Keyring, newRing: Keyring): (wrapped: Uint8Array, vaultId: string) => Promise<Uint8Array> {
  return async (wrapped, vaultId) => {
    try {
      await newRing.unwrap(wrapped, vaultId)
      return wrapped
    } catch {
      return newRing.wrap(await oldRing.unwrap(wrapped, vaultId), vaultId)
    }
  }
}

/** Undoing a first pass that failed: a key under the new master key goes back under the old one; any other is left as it is. */
function backUnder(newRing: Keyring, oldRing: Keyring): (wrapped: Uint8Array, vaultId: string) => Promise<Uint8Array> {
  return async (wrapped, vaultId) => {
    const key = await newRing.unwrap(wrapped, vaultId).catch(() => null)
    return key ? oldRing.wrap(key, vaultId) : wrapped
  }
}

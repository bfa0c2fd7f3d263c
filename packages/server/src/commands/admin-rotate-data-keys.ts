import { ADMINISTRATOR } from '@envkeep/env-api-plugin'
import { loadKeySource } from '../keyring-file.js'
import { adminDomain, CommandFailure, openData, report, UsageFailure, type CommandContext } from './context.js'

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/**
 * `admin rotate-data-keys [--from VAULT_ID]`: every vault gets a new data
 * key, and every value it stores (variables and the staged values of
 * pending pushes) is opened with the old key and sealed with the new one.
 * After it, a copy of the old wrapped keys (an old backup) with the master
 * key opens nothing written since.
 *
 * Online: one vault at a time, each in one storage transaction; a running
 * server notices the new key on its next use (a write sealed under the old
 * key is refused by storage and sealed again, a read that does not open
 * reads the key again). Resumable: vaults go in id order and each is done
 * or untouched, so a run that stopped is finished with `--from` the vault
 * it names (running it all again is safe too).
 */
export async function adminRotateDataKeys(ctx: CommandContext): Promise<number> {
  const from = ctx.flags.from
  if (from !== undefined && (typeof from !== 'string' || !UUID_RE.test(from.toLowerCase()))) throw new UsageFailure('--from takes a vault id')
  const source = loadKeySource(ctx.config)
  if (source.kind === 'none') throw new CommandFailure('there is no master key: run `envkeep-server init` or set ENVKEEP_MASTER_KEY')
  const data = await openData(ctx.config)
  let rotated = 0
  let skipped = 0
  try {
    const start = typeof from === 'string' ? from.toLowerCase() : ''
    const domain = adminDomain(ctx, data, source.keyring)
    for (const vault of await domain.listAllVaults(ADMINISTRATOR)) {
      if (vault.id < start) continue
      try {
        if (await domain.rotateDataKey(ADMINISTRATOR, vault.id)) rotated++
        else skipped++
      } catch (err) {
        throw new CommandFailure(
          `stopped at vault ${vault.id} (${rotated} vault(s) before it done): its key or one of its values did not open, and nothing of it changed; run again with --from ${vault.id}`,
          { cause: err },
        )
      }
    }
  } finally {
    await data.close()
  }
  return report(ctx, `data keys rotated: ${rotated} vault(s), every stored value sealed again; ${skipped} vault(s) without a key yet`, {
    rotated,
    skipped,
  })
}

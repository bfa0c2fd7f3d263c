import { ADMINISTRATOR, type ChangeSetSummary } from '@envkeep/env-api-plugin'
import { loadKeySource } from '../keyring-file.js'
import { adminDomain, CommandFailure, openData, report, requireString, type CommandContext } from './context.js'

/** One change set in JSON: names only, never values. */
function changeJson(c: ChangeSetSummary) {
  return { id: c.id, at: c.at.toISOString(), by: c.by, how: c.how, ref: c.ref, added: c.added, changed: c.changed, deleted: c.deleted }
}

function changeLine(c: ChangeSetSummary): string {
  const parts = [
    c.added.length ? `added ${c.added.join(', ')}` : '',
    c.changed.length ? `changed ${c.changed.join(', ')}` : '',
    c.deleted.length ? `deleted ${c.deleted.join(', ')}` : '',
  ].filter(Boolean)
  return `${c.id}  ${c.at.toISOString()}  ${c.how.padEnd(7)}  ${c.by ?? 'administrator'}  ${parts.join('; ')}`
}

/** `admin history --vault V --env E`: the environment's change sets, newest first, names only. */
export async function adminHistory(ctx: CommandContext): Promise<number> {
  const v = requireString(ctx, 'vault')
  const env = requireString(ctx, 'env')
  const data = await openData(ctx.config)
  try {
    const domain = adminDomain(ctx, data)
    const vault = await domain.findVaultForAdministrator(v)
    const r = await domain.listHistory(ADMINISTRATOR, { vaultId: vault.id, environment: env, limit: 500 })
    const text = r.changes.length === 0 ? `no change recorded in ${env} of vault ${vault.name}` : r.changes.map(changeLine).join('\n')
    return report(ctx, text, { vault: vault.id, environment: env, changes: r.changes.map(changeJson) })
  } finally {
    await data.close()
  }
}

/**
 * `admin restore --vault V --env E --change ID`: every variable of the
 * environment back to its value right after that change set, as one new
 * change set logged as made by the server administrator (recovery without a browser).
 */
export async function adminRestore(ctx: CommandContext): Promise<number> {
  const v = requireString(ctx, 'vault')
  const env = requireString(ctx, 'env')
  const change = requireString(ctx, 'change')
  const source = loadKeySource(ctx.config)
  if (source.kind === 'none') throw new CommandFailure('there is no master key: run `envkeep-server init` or set ENVKEEP_MASTER_KEY')
  const data = await openData(ctx.config)
  try {
    const domain = adminDomain(ctx, data, source.keyring)
    const vault = await domain.findVaultForAdministrator(v)
    const found = await domain.loadChange(ADMINISTRATOR, { vaultId: vault.id, changeSetId: change })
    if (found.change.environment !== env) throw new CommandFailure(`change ${change} is not a change of ${env}`)
    const r = await domain.rollBack(ADMINISTRATOR, { vaultId: vault.id, changeSetId: change, kind: 'restore' })
    const text =
      r.changeSetId === null
        ? `${env} of vault ${vault.name} already holds the values it had right after ${change}: nothing written`
        : `${env} of vault ${vault.name} restored to right after ${change} as change ${r.changeSetId}: ${r.written.length} written, ${r.deleted.length} deleted`
    return report(ctx, text, { vault: vault.id, environment: env, restoredTo: change, change: r.changeSetId, written: r.written, deleted: r.deleted })
  } finally {
    await data.close()
  }
}

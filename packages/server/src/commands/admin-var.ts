import { createVaultCrypto, nameProblem, valueProblem, type VaultAccess } from '@envkeep/env-api-plugin'
import { loadKeySource } from '../keyring-file.js'
import { adminLog, CommandFailure, openData, readStdin, report, requireString, resolveVault, UsageFailure, type CommandContext } from './context.js'

function requireEnvironment(vault: VaultAccess, env: string): void {
  if (!vault.environments.some((e) => e.name === env)) throw new CommandFailure('the vault has no environment with that name')
}

/** `admin var set --vault V --env E NAME`, the value on stdin (never on the command line). */
export async function adminVarSet(ctx: CommandContext): Promise<number> {
  const v = requireString(ctx, 'vault')
  const env = requireString(ctx, 'env')
  if (ctx.args.length !== 1) throw new UsageFailure('give exactly one variable NAME; the value is read from stdin')
  const name = ctx.args[0]!
  const np = nameProblem(name)
  if (np) throw new UsageFailure(np)
  const source = loadKeySource(ctx.config)
  if (source.kind === 'none') throw new CommandFailure('there is no master key: run `envkeep-server init` or set ENVKEEP_MASTER_KEY')
  const value = await readStdin(ctx.deps.stdin)
  const vp = valueProblem(value)
  if (vp) throw new CommandFailure(vp)
  const data = await openData(ctx.config)
  try {
    const vault = await resolveVault(data, v)
    requireEnvironment(vault, env)
    const crypto = createVaultCrypto(data.storage, source.keyring)
    const [sealed] = await crypto.sealValues(vault.id, env, { [name]: value })
    // an admin acts for the vault: the change is recorded under its first owner
    const owner = (await data.storage.listMembers(vault.id)).find((m) => m.role === 'owner')
    const at = ctx.now()
    const limit = { maxVariables: Number.MAX_SAFE_INTEGER, maxBytes: Number.MAX_SAFE_INTEGER }
    await data.storage.setVariable({ vaultId: vault.id, environment: env, value: sealed!, by: owner?.personId ?? 'admin', now: at, limit }, adminLog(vault.id, 'variable_set', at, env, [name]))
    return report(ctx, `${name} set in ${env} of vault ${vault.name} (${vault.id})`, { vault: vault.id, environment: env, name })
  } finally {
    await data.close()
  }
}

/** `admin var list --vault V --env E`: names only, never values. */
export async function adminVarList(ctx: CommandContext): Promise<number> {
  const v = requireString(ctx, 'vault')
  const env = requireString(ctx, 'env')
  const data = await openData(ctx.config)
  try {
    const vault = await resolveVault(data, v)
    requireEnvironment(vault, env)
    const names = (await data.storage.listVariableNames(vault.id, env)).map((m) => m.name)
    return report(ctx, names.join('\n'), { vault: vault.id, environment: env, names })
  } finally {
    await data.close()
  }
}

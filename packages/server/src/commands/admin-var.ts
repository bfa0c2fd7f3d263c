import { ADMINISTRATOR, nameProblem } from '@envkeep/env-api-plugin'
import { loadKeySource } from '../keyring-file.js'
import { adminDomain, CommandFailure, openData, readStdin, report, requireString, UsageFailure, type CommandContext } from './context.js'

/**
 * `admin var set --vault V --env E NAME`, the value on stdin (never on the
 * command line): the pages' rules, the plan's storage limit included,
 * logged as the server administrator. With `--ref ENVIRONMENT.NAME` the
 * variable becomes a reference to that variable instead (nothing is read
 * from stdin); a cycle or a target that does not exist is refused.
 */
export async function adminVarSet(ctx: CommandContext): Promise<number> {
  const v = requireString(ctx, 'vault')
  const env = requireString(ctx, 'env')
  if (ctx.args.length !== 1) throw new UsageFailure('give exactly one variable NAME; the value is read from stdin')
  const name = ctx.args[0]!
  const np = nameProblem(name)
  if (np) throw new UsageFailure(np)
  const source = loadKeySource(ctx.config)
  if (source.kind === 'none') throw new CommandFailure('there is no master key: run `envkeep-server init` or set ENVKEEP_MASTER_KEY')
  const ref = typeof ctx.flags.ref === 'string' ? ctx.flags.ref.trim() : undefined
  const value = ref === undefined ? await readStdin(ctx.deps.stdin) : undefined
  const data = await openData(ctx.config)
  try {
    const domain = adminDomain(ctx, data, source.keyring)
    const vault = await domain.findVaultForAdministrator(v)
    await domain.writeVariable(ADMINISTRATOR, { vaultId: vault.id, environment: env, name, ...(ref === undefined ? { value } : { ref }), mode: 'set' })
    const what = ref === undefined ? `${name} set` : `${name} set as a reference to ${ref}`
    return report(ctx, `${what} in ${env} of vault ${vault.name} (${vault.id})`, {
      vault: vault.id,
      environment: env,
      name,
      ...(ref === undefined ? {} : { ref }),
    })
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
    const domain = adminDomain(ctx, data)
    const vault = await domain.findVaultForAdministrator(v)
    const names = await domain.listVariableNames(ADMINISTRATOR, { vaultId: vault.id, environment: env })
    return report(ctx, names.join('\n'), { vault: vault.id, environment: env, names })
  } finally {
    await data.close()
  }
}

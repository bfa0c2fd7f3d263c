import { adminLog, CommandFailure, openData, report, requireString, resolveVault, UsageFailure, type CommandContext } from './context.js'

export const ENVIRONMENT_RE = /^[a-z0-9][a-z0-9-]{0,62}$/

/** `admin env create --vault V --name N [--owners-only]` */
export async function adminEnvCreate(ctx: CommandContext): Promise<number> {
  const v = requireString(ctx, 'vault')
  const name = requireString(ctx, 'name')
  if (!ENVIRONMENT_RE.test(name))
    throw new UsageFailure('an environment name is 1 to 63 lower-case letters, digits and dashes, starting with a letter or digit')
  const ownersOnly = ctx.flags['owners-only'] === true
  const data = await openData(ctx.config)
  try {
    const vault = await resolveVault(data, v)
    if (vault.environments.some((e) => e.name === name)) throw new CommandFailure('the vault has an environment with that name already')
    await data.storage.createEnvironment({ vaultId: vault.id, name, ownersOnly, now: ctx.now() }, adminLog(vault.id, 'environment_created', ctx.now(), name, []))
    return report(ctx, `environment ${name}${ownersOnly ? ' (owners only)' : ''} created in vault ${vault.name} (${vault.id})`, {
      vault: vault.id,
      environment: name,
      ownersOnly,
    })
  } finally {
    await data.close()
  }
}

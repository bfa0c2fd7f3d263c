import { ADMINISTRATOR, environmentNameProblem } from '@envkeep/env-api-plugin'
import { adminDomain, openData, report, requireString, UsageFailure, type CommandContext } from './context.js'

/** `admin env create --vault V --name N [--owners-only]` */
export async function adminEnvCreate(ctx: CommandContext): Promise<number> {
  const v = requireString(ctx, 'vault')
  const name = requireString(ctx, 'name')
  const problem = environmentNameProblem(name)
  if (problem) throw new UsageFailure(problem)
  const ownersOnly = ctx.flags['owners-only'] === true
  const data = await openData(ctx.config)
  try {
    const domain = adminDomain(ctx, data)
    const vault = await domain.findVaultForAdministrator(v)
    await domain.createEnvironment(ADMINISTRATOR, { vaultId: vault.id, name, ownersOnly })
    return report(ctx, `environment ${name}${ownersOnly ? ' (owners only)' : ''} created in vault ${vault.name} (${vault.id})`, {
      vault: vault.id,
      environment: name,
      ownersOnly,
    })
  } finally {
    await data.close()
  }
}

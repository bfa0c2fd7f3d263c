import { ADMINISTRATOR, type CiIdentityRecord } from '@envkeep/env-api-plugin'
import { adminDomain, openData, report, requireString, UsageFailure, type CommandContext } from './context.js'

/** `k=v,k2=v2` → claims; a value may hold `=` but not `,`. */
function parseClaims(raw: string | boolean | undefined): Record<string, string> {
  if (typeof raw !== 'string' || raw.trim() === '') return {}
  const out: Record<string, string> = {}
  for (const part of raw.split(',')) {
    const at = part.indexOf('=')
    if (at <= 0) throw new UsageFailure('--claims takes name=value pairs separated by commas, e.g. ref=refs/heads/main')
    out[part.slice(0, at).trim()] = part.slice(at + 1).trim()
  }
  return out
}

function describe(i: CiIdentityRecord): Record<string, unknown> {
  return {
    id: i.id,
    name: i.name,
    issuer: i.issuer,
    audience: i.audience,
    subject: i.subjectPattern,
    claims: i.requiredClaims,
    role: i.role,
    environments: i.environments,
    createdAt: i.createdAt.toISOString(),
  }
}

/**
 * `admin ci add --vault V --name N --issuer URL|github|gitlab --audience A
 * --subject PATTERN --role editor|owner [--environments a,b] [--claims k=v,…]`:
 * lets CI runs whose identity token matches read the vault, with no stored secret.
 */
export async function adminCiAdd(ctx: CommandContext): Promise<number> {
  const v = requireString(ctx, 'vault')
  const input = {
    name: requireString(ctx, 'name'),
    issuer: requireString(ctx, 'issuer'),
    audience: requireString(ctx, 'audience'),
    subjectPattern: requireString(ctx, 'subject'),
    role: requireString(ctx, 'role'),
    requiredClaims: parseClaims(ctx.flags.claims),
    environments:
      typeof ctx.flags.environments === 'string'
        ? ctx.flags.environments
            .split(',')
            .map((e) => e.trim())
            .filter(Boolean)
        : null,
  }
  if (input.role !== 'editor' && input.role !== 'owner') throw new UsageFailure('--role must be editor or owner')
  const data = await openData(ctx.config)
  try {
    const domain = adminDomain(ctx, data)
    const vault = await domain.findVaultForAdministrator(v)
    const identity = await domain.addCiIdentity(ADMINISTRATOR, { vaultId: vault.id, ...input })
    const scope = identity.environments ? identity.environments.join(', ') : 'every environment its role reads'
    return report(ctx, `CI identity ${identity.name} (${identity.id}) reads vault ${vault.name} as ${identity.role}: ${scope}`, {
      vault: vault.id,
      identity: describe(identity),
    })
  } finally {
    await data.close()
  }
}

/** `admin ci list --vault V`: the CI identities of a vault. */
export async function adminCiList(ctx: CommandContext): Promise<number> {
  const v = requireString(ctx, 'vault')
  const data = await openData(ctx.config)
  try {
    const domain = adminDomain(ctx, data)
    const vault = await domain.findVaultForAdministrator(v)
    const list = await domain.listCiIdentities(ADMINISTRATOR, vault.id)
    const human =
      list.length === 0
        ? `vault ${vault.name} has no CI identity`
        : list
            .map(
              (i) =>
                `${i.name}  ${i.role}  ${i.issuer}  aud=${i.audience}  sub=${i.subjectPattern}  ${i.environments ? i.environments.join(',') : '(all)'}  ${i.id}`,
            )
            .join('\n')
    return report(ctx, human, { vault: vault.id, identities: list.map(describe) })
  } finally {
    await data.close()
  }
}

/** `admin ci remove --vault V --name N|ID`: removes one; its live tokens stop at once. */
export async function adminCiRemove(ctx: CommandContext): Promise<number> {
  const v = requireString(ctx, 'vault')
  const which = requireString(ctx, 'name')
  const data = await openData(ctx.config)
  try {
    const domain = adminDomain(ctx, data)
    const vault = await domain.findVaultForAdministrator(v)
    const removed = await domain.removeCiIdentity(ADMINISTRATOR, { vaultId: vault.id, identity: which })
    return report(ctx, `CI identity ${removed.name} removed from vault ${vault.name}; its tokens no longer work`, {
      vault: vault.id,
      removed: removed.id,
    })
  } finally {
    await data.close()
  }
}

import type { EnvironmentInfo, VaultAccess } from '../adapters/vault-store.js'
import type { Actor } from './actor.js'
import type { DomainDeps } from './deps.js'
import { fail } from './failure.js'
import { ciVault, isCiPrincipal } from './ci-vault.js'

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export const VAULT_NOT_FOUND = 'this vault does not exist or is not shared with you'
export const ENVIRONMENT_NOT_FOUND = 'this environment does not exist in the vault'
/** How the API names what it did not find: one answer for every unreachable case. */
export const VAULT_OR_ENVIRONMENT = 'the vault or environment'

/** A vault id in canonical (lowercase) form, or null when it is not a UUID. */
export function vaultIdOrNull(s: string): string | null {
  return UUID_RE.test(s) ? s.toLowerCase() : null
}

/**
 * The vault as the actor sees it, or not_found (absent and not shared look
 * the same). The administrator sees every vault, with an owner's rights.
 */
export async function locateVault(d: DomainDeps, actor: Actor, vaultId: string): Promise<VaultAccess> {
  const id = vaultIdOrNull(vaultId)
  const vault = id === null ? null : await findVault(d, actor, id)
  if (!vault) throw fail.notFound(VAULT_NOT_FOUND, VAULT_OR_ENVIRONMENT)
  return vault
}

async function findVault(d: DomainDeps, actor: Actor, id: string): Promise<VaultAccess | null> {
  if (actor.kind === 'person')
    return isCiPrincipal(actor.personId) ? ciVault(d, actor.personId, id) : ((await d.storage.listVaults(actor.personId, { vaultId: id }))[0] ?? null)
  const [v] = await d.storage.findVaults({ id })
  return v ? { ...v, role: 'owner' } : null
}

/** Called once the vault and environment are found, before any refusal (the API names them in its messages). */
export type Located = (vault: VaultAccess, env: EnvironmentInfo) => void

/** An environment of a located vault, or not_found. */
export function environmentOf(vault: VaultAccess, name: string): EnvironmentInfo {
  const env = vault.environments.find((e) => e.name === name)
  if (!env) throw fail.notFound(ENVIRONMENT_NOT_FOUND, VAULT_OR_ENVIRONMENT)
  return env
}

/** The vault and environment as the actor sees them, or not_found. */
export async function locateEnvironment(
  d: DomainDeps,
  actor: Actor,
  vaultId: string,
  environment: string,
): Promise<{ vault: VaultAccess; env: EnvironmentInfo }> {
  const vault = await locateVault(d, actor, vaultId)
  return { vault, env: environmentOf(vault, environment) }
}

/**
 * For the administrator's commands: a vault by id or exact name across
 * all vaults; refused when none or several match (several: give the id).
 */
export async function findVaultForAdministrator(d: DomainDeps, ref: string): Promise<VaultAccess> {
  const id = vaultIdOrNull(ref)
  const found = await d.storage.findVaults(id ? { id } : { name: ref })
  if (found.length === 0) throw fail.notFound('no vault with that id or name')
  if (found.length > 1) throw fail.conflict(`several vaults have that name; use the vault id: ${found.map((v) => v.id).join(', ')}`)
  return { ...(found[0] as (typeof found)[number]), role: 'owner' }
}

/** The vaults a person is a member of. */
export async function listVaults(d: DomainDeps, personId: string): Promise<VaultAccess[]> {
  if (isCiPrincipal(personId)) {
    const v = await ciVault(d, personId)
    return v ? [v] : []
  }
  return d.storage.listVaults(personId)
}

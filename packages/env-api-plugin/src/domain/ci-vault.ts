import { ciIdentityIdOf } from '../adapters/ci-identity-store.js'
import type { VaultAccess } from '../adapters/vault-store.js'
import type { DomainDeps } from './deps.js'

/** How a CI identity reaches its vault (ci-identities.ts manages them; vaults.ts locates through this). */

/** A vault as a CI identity reaches it: its role, and the environments it is limited to (null: all its role reads). */
export interface CiVaultAccess extends VaultAccess {
  readonly ciEnvironments: readonly string[] | null
}

/** Whether this sign-in principal is a CI identity (not a person). */
export function isCiPrincipal(principal: string): boolean {
  return ciIdentityIdOf(principal) !== null
}

/** The vault a CI identity belongs to, as it reaches it; null for another vault or a removed identity. */
export async function ciVault(d: DomainDeps, principal: string, vaultId?: string): Promise<CiVaultAccess | null> {
  const id = ciIdentityIdOf(principal)
  if (id === null) return null
  const [identity] = await d.storage.findCiIdentities({ id })
  if (!identity || (vaultId !== undefined && identity.vaultId !== vaultId)) return null
  const [vault] = await d.storage.findVaults({ id: identity.vaultId })
  return vault ? { ...vault, role: identity.role, ciEnvironments: identity.environments } : null
}

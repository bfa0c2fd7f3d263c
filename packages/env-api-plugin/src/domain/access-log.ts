import type { AccessAction, AccessLogRow } from '../adapters/vault-store.js'
import type { Actor } from './actor.js'
import type { DomainDeps } from './deps.js'
import { locateVault } from './vaults.js'

/**
 * Reading a vault's access log: every member may (names and who, never
 * values). Which entry each change writes is decided where the change is
 * made (vaults, members, environments, variables, pushes) and written by
 * storage in the change's own transaction.
 */
export async function listAccessLog(
  d: DomainDeps,
  actor: Actor,
  input: { vaultId: string; environment?: string; action?: AccessAction; before?: number; limit: number },
): Promise<AccessLogRow[]> {
  const vault = await locateVault(d, actor, input.vaultId)
  const { vaultId: _vaultId, ...filter } = input
  return d.storage.listAccessLog(vault.id, filter)
}

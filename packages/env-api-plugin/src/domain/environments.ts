import type { EnvironmentInfo, VaultAccess } from '../adapters/vault-store.js'
import { entryFor, type Actor } from './actor.js'
import type { DomainDeps } from './deps.js'
import { fail } from './failure.js'
import { requireOwner } from './permissions.js'
import { environmentNameProblem } from './rules.js'
import { locateVault, VAULT_NOT_FOUND, VAULT_OR_ENVIRONMENT } from './vaults.js'

/** Adds an environment (owners and the administrator), optionally owners-only. */
export async function createEnvironment(
  d: DomainDeps,
  actor: Actor,
  input: { vaultId: string; name: string; ownersOnly: boolean },
): Promise<{ vault: VaultAccess; environment: EnvironmentInfo }> {
  const vault = await locateVault(d, actor, input.vaultId)
  requireOwner(vault, 'add environments')
  const name = input.name.trim()
  const problem = environmentNameProblem(name)
  if (problem) throw fail.invalid(problem)
  const now = d.now()
  const r = await d.storage.changeVault(
    { kind: 'create_environment', vaultId: vault.id, name, ownersOnly: input.ownersOnly, now },
    entryFor(actor, { vaultId: vault.id, action: 'environment_created', at: now, environment: name }),
  )
  if (!r.ok && r.reason === 'not_found') throw fail.notFound(VAULT_NOT_FOUND, VAULT_OR_ENVIRONMENT)
  if (!r.ok) throw fail.conflict('an environment with that name exists in this vault')
  return { vault, environment: { name, ownersOnly: input.ownersOnly } }
}

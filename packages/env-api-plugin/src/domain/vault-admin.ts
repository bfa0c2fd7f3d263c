import { randomUUID } from 'node:crypto'
import { doneValue } from '../adapters/results.js'
import type { EnvironmentInfo, VaultAccess, VaultRecord } from '../adapters/vault-store.js'
import { authorOf, entryFor, type Actor } from './actor.js'
import type { DomainDeps } from './deps.js'
import { fail } from './failure.js'
import { defaultPlan } from './limits.js'
import { requireOwner } from './permissions.js'
import { DEFAULT_ENVIRONMENTS, vaultNameProblem } from './rules.js'
import { environmentOf, locateVault } from './vaults.js'

/**
 * Vault administration (issue 14): names unique (case-insensitive) among
 * the vaults a person reaches; rename and delete by owners; an
 * environment's rules (owners-only, "Require a second person").
 */

/** Case-insensitive comparison of vault names, as people read them. */
export function sameVaultName(a: string, b: string): boolean {
  return a.normalize('NFC').toLocaleLowerCase('en') === b.normalize('NFC').toLocaleLowerCase('en')
}

/**
 * Refuses when `personId` reaches a vault (other than `except`) with this name. The refusal
 * never quotes the other vault's name: for "they" it is someone else's vault, and even its
 * spelling (case) is theirs to know.
 */
export async function requireFreeName(d: DomainDeps, personId: string, name: string, who: 'you' | 'they', except?: string): Promise<void> {
  const clash = (await d.storage.listVaults(personId)).find((v) => v.id !== except && sameVaultName(v.name, name))
  if (!clash) return
  throw fail.conflict(
    who === 'you'
      ? 'a vault you can reach already has that name (names are unique regardless of case); choose another name'
      : 'a vault they can reach already has that name (names are unique regardless of case for each person); choose another name',
  )
}

/**
 * Creates a vault with the default environments on the default plan. A
 * person becomes its owner; the administrator names the owner.
 */
export async function createVault(d: DomainDeps, actor: Actor, input: { name: string; ownerId?: string }): Promise<VaultRecord> {
  const name = input.name.trim()
  const problem = vaultNameProblem(name)
  if (problem) throw fail.invalid(problem)
  const ownerId = input.ownerId ?? authorOf(actor)
  if (ownerId === null) throw fail.invalid('a vault needs an owner')
  await requireFreeName(d, ownerId, name, input.ownerId === undefined ? 'you' : 'they')
  const id = randomUUID()
  const now = d.now()
  const r = await d.storage.createVault(
    { id, name, ownerId, plan: defaultPlan(d.plans), environments: DEFAULT_ENVIRONMENTS, now },
    entryFor(actor, { vaultId: id, action: 'vault_created', at: now, subject: ownerId, detail: 'owner' }),
  )
  return doneValue(r)
}

/** Renames a vault (owners): the name rules, unique among every member's vaults. */
export async function renameVault(d: DomainDeps, actor: Actor, input: { vaultId: string; name: string }): Promise<VaultRecord> {
  const vault = await locateVault(d, actor, input.vaultId)
  requireOwner(vault, 'rename the vault')
  const name = input.name.trim()
  const problem = vaultNameProblem(name)
  if (problem) throw fail.invalid(problem)
  if (name === vault.name) return vault
  for (const m of await d.storage.listMembers(vault.id)) {
    await requireFreeName(d, m.personId, name, m.personId === authorOf(actor) ? 'you' : 'they', vault.id)
  }
  const now = d.now()
  const r = await d.storage.changeVault(
    { kind: 'rename', vaultId: vault.id, name },
    entryFor(actor, { vaultId: vault.id, action: 'vault_renamed', at: now, detail: name }),
  )
  if (!r.ok) throw fail.notFound('this vault does not exist or is not shared with you', 'the vault')
  return { ...vault, name }
}

/**
 * Deletes a vault with its values, pushes, history and access log
 * (owners), after the person typed its name; one server-level audit line
 * says who deleted which vault when.
 */
export async function deleteVault(d: DomainDeps, actor: Actor, input: { vaultId: string; confirmName: string }): Promise<VaultAccess> {
  const vault = await locateVault(d, actor, input.vaultId)
  requireOwner(vault, 'delete the vault')
  if (input.confirmName.trim() !== vault.name) throw fail.invalid(`type the vault's name, ${vault.name}, to delete it`)
  if (!(await d.storage.deleteVault({ vaultId: vault.id, by: authorOf(actor), at: d.now() })).ok) {
    throw fail.notFound('this vault does not exist or is not shared with you', 'the vault')
  }
  return vault
}

/** Changes an environment's rules (owners): owners-only, and whether a push's sender may decide it. */
export async function setEnvironmentRules(
  d: DomainDeps,
  actor: Actor,
  input: { vaultId: string; environment: string; ownersOnly?: boolean; secondPerson?: boolean },
): Promise<EnvironmentInfo> {
  const vault = await locateVault(d, actor, input.vaultId)
  requireOwner(vault, 'change environments')
  const env = environmentOf(vault, input.environment)
  const next = { ownersOnly: input.ownersOnly ?? env.ownersOnly, secondPerson: input.secondPerson ?? env.secondPerson ?? env.ownersOnly }
  const words = [`owners only: ${next.ownersOnly ? 'on' : 'off'}`, `second person: ${next.secondPerson ? 'on' : 'off'}`].join(', ')
  const r = await d.storage.changeVault(
    { kind: 'environment_rules', vaultId: vault.id, environment: env.name, ...next },
    entryFor(actor, { vaultId: vault.id, action: 'environment_changed', at: d.now(), environment: env.name, detail: words }),
  )
  if (!r.ok) throw fail.notFound('this environment does not exist in the vault')
  // an owners-only environment never has personal overrides (issue 24): made one, they go
  if (next.ownersOnly && !env.ownersOnly)
    await d.storage.changeOverride(
      { kind: 'allow', vaultId: vault.id, environment: env.name, allow: false },
      entryFor(actor, { vaultId: vault.id, action: 'environment_changed', at: d.now(), environment: env.name, detail: 'personal overrides: off' }),
    )
  return { name: env.name, ...next }
}

/** Whether the sender of a push may not decide it: the vault's rule or the environment's. */
export function secondPersonRequired(vault: VaultAccess, env: EnvironmentInfo): boolean {
  return vault.requireSecondPerson || (env.secondPerson ?? env.ownersOnly)
}

/**
 * Whether a change of values by this actor must be proposed as a push that another person
 * decides (issue 25): a person, on an environment that requires a second person. Every
 * direct change (changeEnvironment) checks it, so no page or route can forget it. The server
 * administrator (`admin var set`, `admin restore`, on the server itself) is the break-glass
 * and is not bound: whoever runs them holds the database and the master key already, so a
 * rule there would protect nothing, and a vault whose only owner is away must stay
 * repairable. Their changes are logged as the server administrator's.
 */
export function mustPropose(actor: Actor, vault: VaultAccess, env: EnvironmentInfo): boolean {
  return actor.kind === 'person' && secondPersonRequired(vault, env)
}

/** Why a direct change is refused where it must be proposed. */
export const PROPOSE_INSTEAD = 'this environment requires a second person: a change of its values is proposed as a push, and someone else applies it'

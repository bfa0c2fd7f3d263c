import type { MemberChangeResult, Role, VaultAccess } from '../adapters/vault-store.js'
import { entryFor, requireAdministrator, type Actor, type AdministratorActor } from './actor.js'
import type { DomainDeps } from './deps.js'
import { fail } from './failure.js'
import { endCiIdentitiesAddedBy } from './ci-identities.js'
import { canManageVault } from './permissions.js'
import { isRole, ROLES } from './rules.js'
import { requireFreeName } from './vault-admin.js'
import { locateVault, VAULT_NOT_FOUND, VAULT_OR_ENVIRONMENT } from './vaults.js'

/**
 * Members and their roles. Only owners (and the administrator) change
 * them; "the vault keeps at least one owner" is checked by storage inside
 * the change's transaction, so two owners demoting each other at once
 * cannot leave a vault without one.
 */

export const NEEDS_ACCOUNT = 'there is no account with that email address; the person needs an account first'
export const ALREADY_MEMBER = 'that person is already a member; change their role instead'
export const MEMBER_NOT_FOUND = 'that person is not a member of this vault'
export const LAST_OWNER_DEMOTED = 'a vault must keep at least one owner; make someone else owner first'
export const LAST_OWNER_REMOVED = 'a vault must keep at least one owner; the last owner cannot be removed'

function requireOwner(vault: VaultAccess, what: string): void {
  if (!canManageVault(vault.role)) throw fail.forbidden(`your role (${vault.role}) cannot ${what}; only owners can`)
}

function roleOf(role: string): Role {
  if (!isRole(role)) throw fail.invalid(`a role must be ${ROLES.slice(0, -1).join(', ')} or ${ROLES[ROLES.length - 1]}`)
  return role
}

export interface MemberChangeOutcome {
  readonly vault: VaultAccess
  readonly personId: string
  readonly role: Role
  /** the role before; null when the person was not a member */
  readonly previous: Role | null
}

/**
 * Adds the person with this email as a member. `mode: 'new'` (the pages)
 * refuses someone who is a member already; `'any'` (the administrator's
 * `member add`) changes their role instead.
 */
export async function addMember(
  d: DomainDeps,
  actor: Actor,
  input: { vaultId: string; email: string; role: string; mode?: 'new' | 'any' },
): Promise<MemberChangeOutcome> {
  const vault = await locateVault(d, actor, input.vaultId)
  requireOwner(vault, 'add members')
  const role = roleOf(input.role)
  const email = input.email.trim()
  if (email.length === 0 || email.length > 320) throw fail.invalid('an email address is needed')
  const who = await d.people.findPersonByEmail(email)
  if (!who) throw fail.notFound(NEEDS_ACCOUNT)
  const expect = input.mode ?? 'new'
  if (!(await d.storage.listMembers(vault.id)).some((m) => m.personId === who.id)) await requireFreeName(d, who.id, vault.name, 'they', vault.id)
  const r = await d.storage.changeMember(
    { kind: 'set', vaultId: vault.id, personId: who.id, role, expect },
    entryFor(actor, { vaultId: vault.id, action: 'member_added', at: d.now(), subject: who.id, detail: role }),
  )
  const added = outcome(vault, who.id, role, r)
  if (added.previous === 'owner' && role !== 'owner') await endCiIdentitiesAddedBy(d, actor, vault.id, who.id)
  return added
}

/** Changes a member's role. */
export async function changeRole(d: DomainDeps, actor: Actor, input: { vaultId: string; personId: string; role: string }): Promise<MemberChangeOutcome> {
  const vault = await locateVault(d, actor, input.vaultId)
  requireOwner(vault, 'change roles')
  const role = roleOf(input.role)
  const r = await d.storage.changeMember(
    { kind: 'set', vaultId: vault.id, personId: input.personId, role, expect: 'existing' },
    entryFor(actor, { vaultId: vault.id, action: 'member_changed', at: d.now(), subject: input.personId, detail: role }),
  )
  const changed = outcome(vault, input.personId, role, r)
  if (changed.previous === 'owner' && role !== 'owner') await endCiIdentitiesAddedBy(d, actor, vault.id, input.personId)
  return changed
}

function outcome(vault: VaultAccess, personId: string, role: Role, r: MemberChangeResult): MemberChangeOutcome {
  if (r.ok) return { vault, personId, role, previous: r.value }
  if (r.reason === 'not_found') throw fail.notFound(VAULT_NOT_FOUND, VAULT_OR_ENVIRONMENT) // deleted meanwhile
  if (r.reason === 'not_member') throw fail.notFound(MEMBER_NOT_FOUND)
  if (r.reason === 'already_member') throw fail.conflict(ALREADY_MEMBER)
  throw fail.conflict(LAST_OWNER_DEMOTED)
}

/** Removes a member (the last owner stays). */
export async function removeMember(
  d: DomainDeps,
  actor: Actor,
  input: { vaultId: string; personId: string },
): Promise<{ vault: VaultAccess; personId: string; previous: Role }> {
  const vault = await locateVault(d, actor, input.vaultId)
  requireOwner(vault, 'remove members')
  const r = await d.storage.changeMember(
    { kind: 'remove', vaultId: vault.id, personId: input.personId },
    entryFor(actor, { vaultId: vault.id, action: 'member_removed', at: d.now(), subject: input.personId }),
  )
  if (r.ok && r.value !== null) {
    if (r.value === 'owner') await endCiIdentitiesAddedBy(d, actor, vault.id, input.personId)
    return { vault, personId: input.personId, previous: r.value }
  }
  if (r.ok || r.reason !== 'last_owner') throw fail.notFound(MEMBER_NOT_FOUND)
  throw fail.conflict(LAST_OWNER_REMOVED)
}

/**
 * A membership given, changed or taken (`role` null) by a single-sign-on group
 * rule at a person's sign-in (issue 22; the server's oidc/group-rules.ts decides
 * which): the administrator's act, logged as the rule's (`group-rule:<group>`,
 * no person). Refusals (`last_owner`, `expect`) are answered, not thrown.
 */
export async function changeMemberByRule(
  d: DomainDeps,
  actor: AdministratorActor,
  input: { vaultId: string; personId: string; role: Role | null; expect?: 'new' | 'existing'; group: string },
): Promise<MemberChangeResult> {
  requireAdministrator(actor, 'apply group rules')
  const { vaultId, personId, role } = input
  const action = role === null ? 'member_removed' : input.expect === 'new' ? 'member_added' : 'member_changed'
  const log = { ...entryFor(actor, { vaultId, action, at: d.now(), subject: personId, detail: role }), clientId: `group-rule:${input.group}` }
  return d.storage.changeMember(
    role === null ? { kind: 'remove', vaultId, personId } : { kind: 'set', vaultId, personId, role, ...(input.expect ? { expect: input.expect } : {}) },
    log,
  )
}

/** Removes the person with this email (the administrator's `member remove`). */
export async function removeMemberByEmail(
  d: DomainDeps,
  actor: Actor,
  input: { vaultId: string; email: string },
): Promise<{ vault: VaultAccess; personId: string; previous: Role }> {
  const who = await d.people.findPersonByEmail(input.email.trim())
  if (!who) throw fail.notFound('there is no account with that email address')
  return removeMember(d, actor, { vaultId: input.vaultId, personId: who.id })
}

/** Members of a vault the actor can see. */
export async function listMembers(d: DomainDeps, actor: Actor, vaultId: string): Promise<{ personId: string; role: Role }[]> {
  const vault = await locateVault(d, actor, vaultId)
  return d.storage.listMembers(vault.id)
}

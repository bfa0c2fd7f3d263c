import type { PendingInvitation, Person } from '../adapters/people.js'
import type { Role, VaultAccess } from '../adapters/vault-store.js'
import { entryFor, type PersonActor } from './actor.js'
import { invitationDetail } from './access-log.js'
import type { DomainDeps } from './deps.js'
import { fail } from './failure.js'
import { ALREADY_MEMBER, addMember, NEEDS_ACCOUNT, type MemberChangeOutcome } from './members.js'
import { canManageVault } from './permissions.js'
import { isRole, ROLES } from './rules.js'
import { locateVault } from './vaults.js'

/**
 * "Invite" on a vault's Members: someone with an account becomes a member
 * at once (addMember); someone without one gets an invitation from the
 * people adapter's optional `invite` hook (the host owns accounts, so it
 * owns invitations too). Owners only, as every member change.
 */

export { NEEDS_ACCOUNT }
export const INVITATION_NOT_FOUND = 'that invitation is no longer pending (it was used, revoked or has expired)'

export type InviteOutcome =
  | { readonly kind: 'added'; readonly member: MemberChangeOutcome }
  | {
      readonly kind: 'invited'
      readonly vault: VaultAccess
      readonly email: string
      readonly role: Role
      /** shown once on the page; never stored or logged by the plugin. null: it went only to `email` */
      readonly link: string | null
      readonly emailed: boolean
    }

function requireOwner(vault: VaultAccess, what: string): void {
  if (!canManageVault(vault.role)) throw fail.forbidden(`your role (${vault.role}) cannot ${what}; only owners can`)
}

/** Whether the host can invite people who have no account. */
export function canInvite(d: DomainDeps): boolean {
  return typeof d.people.invite === 'function'
}

/**
 * Adds the person with this email, or invites them when they have no
 * account. The actor is a person (the invitation names who sent it).
 */
export async function inviteMember(
  d: DomainDeps,
  actor: PersonActor,
  input: { vaultId: string; email: string; role: string; invitedBy: Person },
): Promise<InviteOutcome> {
  if (input.invitedBy.id !== actor.personId) throw new TypeError('envkeep: invitedBy must be the acting person')
  const vault = await locateVault(d, actor, input.vaultId)
  requireOwner(vault, 'add members')
  if (!isRole(input.role)) throw fail.invalid(`a role must be ${ROLES.slice(0, -1).join(', ')} or ${ROLES[ROLES.length - 1]}`)
  const role = input.role
  const email = input.email.trim()
  if (email.length === 0 || email.length > 320) throw fail.invalid('an email address is needed')
  if (!/^[^\s@\p{Cc}\p{Cf}]+@[^\s@\p{Cc}\p{Cf}]+$/u.test(email)) throw fail.invalid('the email address is not valid')
  const invite = d.people.invite
  const who = await d.people.findPersonByEmail(email)
  if (invite && who && d.people.invitesAccounts === true) {
    // the owner sees the members already: only a member is refused, anyone else is invited alike
    if ((await d.storage.listMembers(vault.id)).some((m) => m.personId === who.id)) throw fail.conflict(ALREADY_MEMBER)
  } else if (!invite || who) {
    // an account exists (or the host cannot invite): the member rules decide, and say "needs an account first"
    return { kind: 'added', member: await addMember(d, actor, { vaultId: vault.id, email, role, mode: 'new' }) }
  }
  const r = await invite.call(d.people, { email, role, vaultId: vault.id, vaultName: vault.name, invitedBy: input.invitedBy })
  const emailed = r?.emailed === true
  if (!r || (r.link === null ? !emailed : typeof r.link !== 'string' || r.link === '')) throw new Error('envkeep: people.invite returned no link')
  // issue 25: logged with the role and the email (owners see it), never the link or its token
  await d.storage.appendAccessLog(entryFor(actor, { vaultId: vault.id, action: 'invitation_sent', at: d.now(), detail: invitationDetail(role, email) }))
  return { kind: 'invited', vault, email, role, link: r.link, emailed }
}

/** The pending invitations of a vault (owners); null when the host keeps none (no `listInvitations`). */
export async function listInvitations(d: DomainDeps, actor: PersonActor, vaultId: string): Promise<PendingInvitation[] | null> {
  const vault = await locateVault(d, actor, vaultId)
  requireOwner(vault, 'see invitations')
  const list = d.people.listInvitations
  if (!list) return null
  return list.call(d.people, vault.id)
}

/** Revokes a pending invitation (owners). */
export async function revokeInvitation(d: DomainDeps, actor: PersonActor, input: { vaultId: string; invitationId: string }): Promise<{ vault: VaultAccess }> {
  const vault = await locateVault(d, actor, input.vaultId)
  requireOwner(vault, 'revoke invitations')
  const revoke = d.people.revokeInvitation
  if (!revoke) throw fail.notFound(INVITATION_NOT_FOUND)
  const id = input.invitationId
  if (id.length === 0 || id.length > 100) throw fail.notFound(INVITATION_NOT_FOUND)
  const pending = d.people.listInvitations ? (await d.people.listInvitations.call(d.people, vault.id)).find((i) => i.id === id) : undefined
  if (!(await revoke.call(d.people, vault.id, id))) throw fail.notFound(INVITATION_NOT_FOUND)
  await d.storage.appendAccessLog(
    entryFor(actor, {
      vaultId: vault.id,
      action: 'invitation_revoked',
      at: d.now(),
      detail: pending ? invitationDetail(pending.role, pending.email) : null,
    }),
  )
  return { vault }
}

import type { PendingInvitation, Person } from '../adapters/people.js'
import type { Role, VaultAccess } from '../adapters/vault-store.js'
import { canManageVault } from '../domain/permissions.js'
import { ROLES } from '../domain/rules.js'
import { personLabel, when } from './context.js'
import { html, type SafeHtml } from './html.js'

/** An invitation just made: its link is shown in this answer only (the host keeps only a hash). */
export interface InvitationShown {
  readonly email: string
  readonly role: Role
  /** null: sent only to the address by email */
  readonly link: string | null
  readonly emailed: boolean
}

export interface MembersView {
  /** the vault page's URL */
  readonly base: string
  readonly vault: VaultAccess
  readonly person: Person
  readonly csrf: SafeHtml
  readonly members: readonly { readonly personId: string; readonly role: Role }[]
  /** people of `members`, in the same order */
  readonly memberPeople: readonly (Person | null)[]
  /** null: the host keeps no list (or the viewer is not an owner) */
  readonly invitations: readonly PendingInvitation[] | null
  /** who sent each invitation, in the same order */
  readonly inviters: readonly (Person | null)[]
  /** whether the host can invite people who have no account (people.invite) */
  readonly canInvite: boolean
  readonly invited: InvitationShown | null
  /** (owners) members who sign in without a second factor; null when the host does not say */
  readonly noSecondFactor?: ReadonlySet<string> | null
}

/** The Members section of the vault page: members, (owners) roles, invite, pending invitations. */
export function membersSection(v: MembersView): SafeHtml {
  const { base, csrf, members, person } = v
  const owner = canManageVault(v.vault.role)
  const owners = members.filter((m) => m.role === 'owner').length
  const memberRows = members.map((m, i) => {
    const p = v.memberPeople[i] ?? null
    const lastOwner = m.role === 'owner' && owners <= 1
    return html`<tr>
<td data-label="Member">${personLabel(p, m.personId)}${m.personId === person.id ? html` <span class="muted">(you)</span>` : ''}${
      v.noSecondFactor?.has(m.personId) ? html` <span class="badge" title="Signs in with a password alone">no second factor</span>` : ''
    }</td>
<td data-label="Role"><span class="role role-${m.role}">${m.role}</span></td>
${
  owner
    ? html`<td class="actions">
<form method="post" action="${base}/members/change" class="inline">
${csrf}<input type="hidden" name="person" value="${m.personId}">
<label class="vh" for="role-${m.personId}">Role</label>
<select id="role-${m.personId}" name="role"${lastOwner ? html` disabled` : ''}>${ROLES.map((r) => html`<option value="${r}"${r === m.role ? html` selected` : ''}>${r}</option>`)}</select>
<button type="submit" class="secondary"${lastOwner ? html` disabled` : ''}>Change role</button>
</form>
<form method="post" action="${base}/members/remove" class="inline" data-confirm="Remove this member from the vault?">
${csrf}<input type="hidden" name="person" value="${m.personId}">
<button type="submit" class="danger"${lastOwner ? html` disabled title="A vault keeps at least one owner"` : ''}>Remove</button>
</form>
</td>`
    : ''
}
</tr>`
  })

  return html`<h2>Members</h2>
${v.invited ? invitationLink(v.invited) : ''}
<table class="stack"><thead><tr><th>Member</th><th>Role</th>${owner ? html`<th></th>` : ''}</tr></thead><tbody>${memberRows}</tbody></table>
${owner && v.invitations ? pendingInvitations(v) : ''}
${
  owner
    ? html`<section class="card">
<h3>Invite</h3>
<form method="post" action="${base}/members/invite">
${csrf}
<label for="member-email">Email</label>
<input id="member-email" name="email" type="email" required autocomplete="off">
<label for="member-role">Role</label>
<select id="member-role" name="role">${ROLES.map((r) => html`<option value="${r}"${r === 'editor' ? html` selected` : ''}>${r}</option>`)}</select>
<p class="hint">${
        v.canInvite ? 'Someone who has an account is added at once; anyone else gets an invitation link to create one.' : 'The person needs an account already.'
      }</p>
<button type="submit">Invite</button>
</form>
</section>
<p><a href="${base}/ci">CI access</a>: let CI runs read this vault with their own identity token, no stored secret.</p>`
    : ''
}`
}

function invitationLink(i: InvitationShown): SafeHtml {
  if (i.link === null)
    return html`<section class="card" id="invitation" role="status" aria-labelledby="invitation-title">
<h3 id="invitation-title">Invitation sent</h3>
<p>An invitation for <span class="email">${i.email}</span> as <span class="role role-${i.role}">${i.role}</span> was sent to that address. Its link works once, only from that email.</p>
</section>`
  return html`<section class="card" id="invitation" role="status" aria-labelledby="invitation-title">
<h3 id="invitation-title">Invitation link</h3>
<p>For <span class="email">${i.email}</span> as <span class="role role-${i.role}">${i.role}</span>. ${
    i.emailed ? 'It was also sent to that address.' : 'Send it to them yourself.'
  } It is shown only this once and works once.</p>
<p class="invitation"><code id="invitation-link" class="value">${i.link}</code> <button type="button" class="copy secondary" data-copy="invitation-link" aria-label="Copy the invitation link">Copy</button></p>
</section>`
}

function pendingInvitations(v: MembersView): SafeHtml {
  const list = v.invitations ?? []
  if (list.length === 0) return html``
  const rows = list.map(
    (inv, i) => html`<tr>
<td data-label="Email"><span class="email">${inv.email}</span></td>
<td data-label="Role"><span class="role role-${inv.role}">${inv.role}</span></td>
<td data-label="Invited by">${personLabel(v.inviters[i] ?? null, inv.invitedBy)}</td>
<td data-label="Expires">${when(inv.expiresAt)}</td>
<td class="actions"><form method="post" action="${v.base}/members/invitations/revoke" class="inline" data-confirm="Revoke this invitation? Its link stops working.">
${v.csrf}<input type="hidden" name="invitation" value="${inv.id}">
<button type="submit" class="danger" aria-label="${`Revoke the invitation of ${inv.email}`}">Revoke</button>
</form></td>
</tr>`,
  )
  return html`<h3>Pending invitations</h3>
<table class="stack invitations"><thead><tr><th>Email</th><th>Role</th><th>Invited by</th><th>Expires</th><th></th></tr></thead><tbody>${rows}</tbody></table>`
}

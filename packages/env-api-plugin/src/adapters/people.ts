import type { FastifyRequest } from 'fastify'
import type { Role } from './vault-store.js'

/** A person as the plugin knows them. */
export interface Person {
  readonly id: string
  readonly email: string
  readonly name: string
}

/**
 * Who the people are, and who is signed in on the web pages. The host app
 * (or the self-hosting server's local accounts) implements it.
 */
export interface PeopleAdapter {
  /** The person signed in on this browser request, or null. Never throws for "not signed in". */
  currentPerson(request: FastifyRequest): Promise<Person | null>
  /** Where to send a browser to sign in, returning to `returnTo` (a path on this service) after. */
  signInUrl(returnTo: string): string
  /** Optional: where a signed-in person goes to sign out; the pages then show a "Sign out" link. */
  signOutUrl?(): string
  /** Optional: the person's own account page (sign-in methods, sessions); their name in the header links there. */
  accountUrl?(): string
  /**
   * Optional, and strongly advised: a secret unique to this browser's sign-in (e.g. the value
   * of the session cookie), or null when signed out. The pages' CSRF tokens are bound to it,
   * so a CSRF cookie planted by a sibling origin yields no usable token. Never logged or sent.
   */
  sessionBinding?(request: FastifyRequest): string | null
  /** A person by id, or null. */
  getPerson(id: string): Promise<Person | null>
  /** A person by email (case-insensitive), or null. */
  findPersonByEmail(email: string): Promise<Person | null>
  /**
   * Optional: invites someone who has no account yet (an owner used "Invite" on a vault's
   * Members with an email no person has). Returns the link that lets them create an account
   * and join the vault with `role`; the page shows it once, to copy, and the plugin never
   * stores or logs it. `emailed: true` when the host also sent it to `email`. May throw a
   * `DomainFailure` (exported by this package) to refuse in words the owner can act on.
   * Without this hook the page says the person needs an account first. `link: null` (with
   * `emailed: true`): the link went only to `email`, and the page says so without showing it.
   */
  invite?(input: InvitationRequest): Promise<{ readonly link: string | null; readonly emailed?: boolean }>
  /**
   * Optional: true when `invite` also takes emails that have an account (the person accepts
   * the invitation, signed in as themselves). "Invite" then never adds anyone at once, and its
   * answer is the same whether or not an email has an account.
   */
  readonly invitesAccounts?: boolean
  /**
   * Optional: of these people, those who sign in without a second factor. The Members section
   * marks them for the vault's owners.
   */
  withoutSecondFactor?(personIds: readonly string[]): Promise<ReadonlySet<string>>
  /** Optional: the pending (unused, unexpired, unrevoked) invitations to a vault; shown to its owners. */
  listInvitations?(vaultId: string): Promise<PendingInvitation[]>
  /** Optional: revokes a pending invitation of this vault; false when there is none with this id. */
  revokeInvitation?(vaultId: string, invitationId: string): Promise<boolean>
}

/**
 * What `invite` is asked: checked by the plugin already (an owner asks, the role is valid, no
 * account has the email, or none that is a member when `invitesAccounts`).
 */
export interface InvitationRequest {
  /** trimmed, as the owner typed it */
  readonly email: string
  readonly role: Role
  readonly vaultId: string
  readonly vaultName: string
  /** the owner who invites */
  readonly invitedBy: Person
}

/** A pending invitation as the Members section lists it (never its link). */
export interface PendingInvitation {
  readonly id: string
  readonly email: string
  readonly role: Role
  /** the person id of who invited */
  readonly invitedBy: string
  readonly createdAt: Date
  readonly expiresAt: Date
}

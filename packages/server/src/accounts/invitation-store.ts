import type { Role } from '@envkeep/env-api-plugin'
import type { AccountRecord } from './account-record.js'

/** An invitation to a vault for someone without an account (the Members section's "Invite"). */
export interface InvitationRecord {
  readonly id: string
  readonly vaultId: string
  /** the account it creates gets this email */
  readonly email: string
  readonly role: Role
  /** the account id of the owner who invited */
  readonly invitedBy: string
  readonly createdAt: Date
  readonly expiresAt: Date
  /** the link went only to `email`, by email: taking it up proves the address */
  readonly provesEmail: boolean
}

export interface NewInvitation extends InvitationRecord {
  /** SHA-256 hex of the link's token; the token itself is never stored */
  readonly tokenHash: string
}

export type AcceptInvitationResult =
  | { readonly ok: true; readonly invitation: InvitationRecord; readonly account: AccountRecord }
  /** unknown, used, revoked and expired look the same */
  | { readonly ok: false; readonly reason: 'not_live' }
  /** an account with the invitation's email exists already: nothing changed */
  | { readonly ok: false; readonly reason: 'email_taken' }

/**
 * The server's invitations, in the same database as its accounts (same
 * rules: absent → null, the single-use step is one atomic method, tokens
 * only as SHA-256 hex hashes). "Live" means not used, not revoked and
 * `now < expiresAt`; a used or revoked invitation is deleted.
 */
export interface InvitationStore {
  /** Stores an invitation, replacing any other of the same email to the same vault (only the newest link works). */
  createInvitation(invitation: NewInvitation): Promise<InvitationRecord>
  /** The live invitation with this token hash, or null. Never consumes. */
  findInvitation(tokenHash: string, now: Date): Promise<InvitationRecord | null>
  /** The live invitations to a vault, oldest first. */
  listInvitations(vaultId: string, now: Date): Promise<InvitationRecord[]>
  /** Deletes a pending invitation of this vault; false when there is none with this id. */
  revokeInvitation(vaultId: string, id: string): Promise<boolean>
  /**
   * Atomically: consumes the live invitation `tokenHash` (deleted, so it works once) and
   * creates the account with the invitation's email. On `email_taken` nothing changes.
   */
  acceptInvitation(tokenHash: string, account: { id: string; name: string; passwordHash: string }, now: Date): Promise<AcceptInvitationResult>
  /** The live invitations to this email (case-insensitive), oldest first: the notice at sign-in. */
  listInvitationsForEmail(email: string, now: Date): Promise<InvitationRecord[]>
  /**
   * Atomically: consumes the live invitation (by its link's token hash, or by id) when its
   * email is the account's (case-insensitive), and marks the account's email proven when the
   * invitation proves it. Null (nothing changes) when there is no such live invitation.
   */
  takeInvitationFor(accountId: string, which: { tokenHash: string } | { id: string }, now: Date): Promise<InvitationRecord | null>
}

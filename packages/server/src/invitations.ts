import { randomUUID } from 'node:crypto'
import type { FastifyBaseLogger } from 'fastify'
import { DomainFailure, type InvitationRequest, type PeopleAdapter, type PendingInvitation } from '@envkeep/env-api-plugin'
import type { AccountStore } from './accounts/account-store.js'
import type { InvitationRecord } from './accounts/invitation-store.js'
import { mailFailure, type Mailer } from './mailer.js'
import { hashToken, newToken } from './secrets.js'

/** An invitation link works for 7 days (decisions.md). */
export const INVITATION_TTL_MS = 7 * 24 * 60 * 60 * 1000

export interface InvitationHooksOptions {
  readonly accounts: AccountStore
  /** public base URL, no trailing slash: links are `<baseUrl>/invite/<token>` */
  readonly baseUrl: string
  readonly now: () => Date
  /** null: links are only shown to copy */
  readonly mailer: Mailer | null
  readonly log: FastifyBaseLogger
}

export type InvitationHooks = Required<Pick<PeopleAdapter, 'invite' | 'invitesAccounts' | 'listInvitations' | 'revokeInvitation'>>

function pending(r: InvitationRecord): PendingInvitation {
  return { id: r.id, email: r.email, role: r.role, invitedBy: r.invitedBy, createdAt: r.createdAt, expiresAt: r.expiresAt }
}

/**
 * A name, vault name or address as one line of plain text for an email: control and format
 * characters (a newline, a tab, bidi overrides) become a space, so nobody's name can add a
 * header or forge lines of the message (issue 25). Capped at 200 characters.
 */
export function plainLine(s: string): string {
  const one = s
    .replace(/[\p{Cc}\p{Cf}\u2028\u2029]+/gu, ' ')
    .replace(/ {2,}/g, ' ')
    .trim()
  return one.length > 200 ? `${one.slice(0, 199)}…` : one
}

function message(input: InvitationRequest, link: string, expiresAt: Date) {
  const inviter = plainLine(input.invitedBy.name)
  const vault = plainLine(input.vaultName)
  const by = `${inviter} (${plainLine(input.invitedBy.email)})`
  return {
    to: input.email,
    subject: `${inviter} invited you to ${vault} on envkeep`,
    text: [
      `${by} invited you to the vault "${vault}" on envkeep, as ${input.role}.`,
      '',
      'Open this link to join (you sign in, or choose your name and password if you have no account yet):',
      link,
      '',
      `The link works once, until ${expiresAt.toISOString().slice(0, 16).replace('T', ' ')} UTC.`,
      'If you did not expect this invitation, ignore this email.',
      '',
    ].join('\n'),
  }
}

export const INVITATION_NOT_SENT =
  'the invitation email could not be sent, so no invitation was made; try again later, or ask the server administrator to check the mail settings'

/**
 * The people adapter's invitation hooks over the server's own store: a random token, only
 * its SHA-256 stored, 7 days, one use (the page at /invite/<token> consumes it).
 *
 * Issue 25 (account pre-hijacking): every email gets an invitation, with or without an
 * account (`invitesAccounts`: nobody is added at once, and the answer never tells whether an
 * email has an account); someone with an account accepts it signed in as themselves. With
 * SMTP the link goes only to the address and is never shown to the inviter, so taking it up
 * proves the email; an email that fails makes no invitation (the owner is told to retry).
 * Without SMTP the link is shown to the inviter (there is no other way), and an account made
 * from it stays unconfirmed: it can be invited again, but never joins a vault without a link.
 */
export function createInvitationHooks(o: InvitationHooksOptions): InvitationHooks {
  return {
    invitesAccounts: true,
    async invite(input) {
      const token = newToken()
      const now = o.now()
      const expiresAt = new Date(now.getTime() + INVITATION_TTL_MS)
      const invitation = await o.accounts.createInvitation({
        id: randomUUID(),
        tokenHash: hashToken(token),
        vaultId: input.vaultId,
        email: input.email,
        role: input.role,
        invitedBy: input.invitedBy.id,
        createdAt: now,
        expiresAt,
        provesEmail: o.mailer !== null,
      })
      const link = `${o.baseUrl}/invite/${token}`
      if (!o.mailer) return { link }
      try {
        await o.mailer.send(message(input, link, expiresAt))
        o.log.info({ invitation: invitation.id }, 'invitation sent by email')
        return { link: null, emailed: true }
      } catch (err) {
        // codes only: never the address, the link, or what the SMTP server said
        o.log.warn({ invitation: invitation.id, ...mailFailure(err) }, 'invitation email not sent')
        await o.accounts.revokeInvitation(input.vaultId, invitation.id)
        throw new DomainFailure('conflict', INVITATION_NOT_SENT)
      }
    },
    async listInvitations(vaultId) {
      return (await o.accounts.listInvitations(vaultId, o.now())).map(pending)
    },
    async revokeInvitation(vaultId, id) {
      return o.accounts.revokeInvitation(vaultId, id)
    },
  }
}

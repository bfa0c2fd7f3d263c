import { randomUUID } from 'node:crypto'
import type { FastifyBaseLogger } from 'fastify'
import type { InvitationRequest, PeopleAdapter, PendingInvitation } from '@envkeep/env-api-plugin'
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

export type InvitationHooks = Required<Pick<PeopleAdapter, 'invite' | 'listInvitations' | 'revokeInvitation'>>

function pending(r: InvitationRecord): PendingInvitation {
  return { id: r.id, email: r.email, role: r.role, invitedBy: r.invitedBy, createdAt: r.createdAt, expiresAt: r.expiresAt }
}

function message(input: InvitationRequest, link: string, expiresAt: Date) {
  const by = `${input.invitedBy.name} (${input.invitedBy.email})`
  return {
    to: input.email,
    subject: `${input.invitedBy.name} invited you to ${input.vaultName} on envkeep`,
    text: [
      `${by} invited you to the vault "${input.vaultName}" on envkeep, as ${input.role}.`,
      '',
      'Choose your name and password, and join the vault, here:',
      link,
      '',
      `The link works once, until ${expiresAt.toISOString().slice(0, 16).replace('T', ' ')} UTC.`,
      'If you did not expect this invitation, ignore this email.',
      '',
    ].join('\n'),
  }
}

/**
 * The people adapter's invitation hooks over the server's own store: a random token, only
 * its SHA-256 stored, 7 days, one use (the page at /invite/<token> consumes it), sent by
 * email too when SMTP is set up. An email that fails leaves the invitation as it is: the
 * owner still gets the link to pass on, and the page says it was not sent.
 */
export function createInvitationHooks(o: InvitationHooksOptions): InvitationHooks {
  return {
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
      })
      const link = `${o.baseUrl}/invite/${token}`
      if (!o.mailer) return { link }
      try {
        await o.mailer.send(message(input, link, expiresAt))
        o.log.info({ invitation: invitation.id }, 'invitation sent by email')
        return { link, emailed: true }
      } catch (err) {
        // codes only: never the address, the link, or what the SMTP server said
        o.log.warn({ invitation: invitation.id, ...mailFailure(err) }, 'invitation email not sent')
        return { link, emailed: false }
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

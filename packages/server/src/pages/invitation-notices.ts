import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { field, html, type PersonActor } from '@envkeep/env-api-plugin'
import type { AccountStore } from '../accounts/account-store.js'
import type { InvitationRecord } from '../accounts/invitation-store.js'
import type { LocalPeople } from '../people-local.js'
import { safeReturnTo, sendPage } from './page-kit.js'

/** A live invitation whose inviter may still add members to its vault. */
export interface Live {
  readonly invitation: InvitationRecord
  readonly vaultName: string
  readonly inviterName: string
  /** who adds the membership: the inviter */
  readonly actor: PersonActor
}

export interface InvitationNoticesOptions {
  readonly accounts: AccountStore
  readonly people: LocalPeople
  readonly basePath: string
  readonly now: () => Date
  live(invitation: InvitationRecord): Promise<Live | null>
  tooMany(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | null>
  addAsInviter(request: FastifyRequest, l: Live, invitation: InvitationRecord, email: string): Promise<boolean>
}

/** Where a sign-in goes when the person has pending invitations (issue 25: adding someone tells them). */
export function noticeUrl(basePath: string, returnTo: string): string {
  return `${basePath}/invitations?return_to=${encodeURIComponent(returnTo)}`
}

/** Where a browser goes once signed in: the notice first when invitations wait for the account's email. */
export async function afterSignIn(accounts: AccountStore, basePath: string, email: string, returnTo: string, now: Date): Promise<string> {
  if (returnTo.startsWith(`${basePath}/invite/`)) return returnTo
  return (await accounts.listInvitationsForEmail(email, now)).length > 0 ? noticeUrl(basePath, returnTo) : returnTo
}

/**
 * `/invitations`: the notice a person sees at sign-in when invitations to their email are
 * pending. Someone whose email is proven joins from here; an account whose email was never
 * proven (made from a link that was shown to an inviter) joins only through a link it was
 * given, so an account someone else made for an address cannot collect that address's
 * invitations.
 */
export async function invitationNotices(app: FastifyInstance, o: InvitationNoticesOptions): Promise<void> {
  const base = o.basePath

  async function pendingFor(accountId: string) {
    const account = await o.accounts.getAccount(accountId)
    if (!account) return null
    const all = await o.accounts.listInvitationsForEmail(account.email, o.now())
    const live = (await Promise.all(all.map((inv) => o.live(inv)))).filter((l): l is Live => l !== null)
    return { account, live }
  }

  app.get(`${base}/invitations`, async function invitationsPage(request, reply) {
    const returnTo = safeReturnTo(field(request.query, 'return_to'), base)
    const me = await o.people.currentPerson(request)
    if (!me)
      return reply
        .code(303)
        .header('location', o.people.signInUrl(`${base}/invitations`))
        .send()
    const p = await pendingFor(me.id)
    if (!p || p.live.length === 0) return reply.code(303).header('location', returnTo).send()
    const csrf = reply.generateCsrf()
    const rows = p.live.map(
      (l) =>
        html`<li><strong>${l.vaultName}</strong> as <span class="role role-${l.invitation.role}">${l.invitation.role}</span>, from ${l.inviterName}${
          p.account.emailConfirmed
            ? html` <form method="post" action="${base}/invitations/join" class="inline">
<input type="hidden" name="_csrf" value="${csrf}"><input type="hidden" name="invitation" value="${l.invitation.id}">
<button type="submit">Join ${l.vaultName}</button></form>`
            : ''
        }</li>`,
    )
    const body = html`<h1>You were invited</h1>
<p>Invitations to <span class="email">${p.account.email}</span> are waiting:</p>
<ul class="notices">${rows}</ul>
${
  p.account.emailConfirmed
    ? ''
    : html`<p>Your email address was never confirmed (your account was made from a link shown to someone else), so you join only by opening the invitation link you were given.</p>`
}
<p><a href="${returnTo}">Continue</a></p>`
    return sendPage(reply, 200, 'You were invited', body, base)
  })

  app.post(`${base}/invitations/join`, { preHandler: app.csrfProtection }, async function joinFromNotice(request, reply) {
    const limited = await o.tooMany(request, reply)
    if (limited) return limited
    const me = await o.people.currentPerson(request)
    if (!me)
      return reply
        .code(303)
        .header('location', o.people.signInUrl(`${base}/invitations`))
        .send()
    const account = await o.accounts.getAccount(me.id)
    const id = field(request.body, 'invitation')
    const pending = account?.emailConfirmed ? (await o.accounts.listInvitationsForEmail(account.email, o.now())).find((i) => i.id === id) : undefined
    const l = pending ? await o.live(pending) : null
    const invitation = l ? await o.accounts.takeInvitationFor(me.id, { id }, o.now()) : null
    if (!l || !invitation) return reply.code(303).header('location', `${base}/invitations`).send()
    const joined = await o.addAsInviter(request, l, invitation, me.email)
    request.log.info({ account: me.id, invitation: invitation.id, vault: invitation.vaultId }, 'invitation accepted')
    return reply
      .code(303)
      .header('location', joined ? `${base}/v/${encodeURIComponent(invitation.vaultId)}` : `${base}/invitations`)
      .send()
  })
}

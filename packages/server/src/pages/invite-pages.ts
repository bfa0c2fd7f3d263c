import type {} from '@envkeep/env-api-plugin'
import { randomUUID } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fastifyFormbody from '@fastify/formbody'
import { canManageVault, DomainFailure, field, html, personActor, refusalBox, type Domain, type Person, type SafeHtml } from '@envkeep/env-api-plugin'
import type { AccountStore } from '../accounts/account-store.js'
import type { InvitationRecord } from '../accounts/invitation-store.js'
import type { LocalPeople } from '../people-local.js'
import { hashPassword, hashToken } from '../secrets.js'
import { nameProblem } from './account-pages.js'
import { createAttemptLimiter, type AttemptCounters } from './attempt-limiter.js'
import { newPasswordFields, newPasswordProblem } from './new-password.js'
import { invitationNotices, type Live } from './invitation-notices.js'
import { failure, formErrorHandler, sendFailurePage, sendPage } from './page-kit.js'

export interface InvitePagesOptions {
  readonly accounts: AccountStore
  readonly people: LocalPeople
  /** the plugin's domain layer: the membership is added through its rules */
  readonly domain: Domain
  readonly basePath: string
  readonly now: () => Date
  /** accept attempts per client address per minute. Default 10. */
  readonly attemptsPerMinute?: number
  /** the storage's shared counters (PostgreSQL): the limit holds across processes */
  readonly attemptCounters?: AttemptCounters | null
}

const TOKEN_RE = /^[A-Za-z0-9_-]{43}$/
const WHAT = 'accepting an invitation'

/**
 * `/invite/<token>`: the page of an invitation link (people.invite in invitations.ts). The
 * invitee chooses a name and a password (asked twice; the setup page's rules), the account
 * is created with the invited email as the link is consumed (one transaction), the
 * membership is added through the plugin's domain layer, and the person is signed in with a
 * fresh session and lands on the vault.
 *
 * The membership is added **as the inviter**, not as the server administrator: the access
 * log then says who let the person in, and the rules are checked again at acceptance, so an
 * invitation from someone who is no longer an owner of the vault (or a deleted vault) no
 * longer works. Used, revoked, expired and unknown links get one page that tells them apart
 * from none of the others. The token is in the path: logger.ts keeps it out of the log.
 */
export async function invitePages(app: FastifyInstance, o: InvitePagesOptions): Promise<void> {
  const base = o.basePath
  const limiter = createAttemptLimiter({
    kind: 'invitation',
    max: o.attemptsPerMinute ?? 10,
    windowMs: 60_000,
    now: o.now,
    counters: o.attemptCounters ?? null,
  })
  await app.register(fastifyFormbody, { bodyLimit: 64 * 1024 })

  app.setErrorHandler(formErrorHandler(base, WHAT))

  async function tooMany(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | null> {
    const r = await limiter.take(request.ip)
    if (r.ok) return null
    reply.header('retry-after', String(r.retryAfterSeconds))
    return sendFailurePage(reply, failure(request, 429, WHAT, 'rate limit', `too many attempts from this address; wait ${r.retryAfterSeconds} seconds`), base)
  }

  /** The live invitation of this token whose inviter may still add members to its vault, or null. */
  async function live(token: string): Promise<Live | null> {
    if (!TOKEN_RE.test(token)) return null
    const invitation = await o.accounts.findInvitation(hashToken(token), o.now())
    return invitation ? liveInvitation(invitation) : null
  }

  async function liveInvitation(invitation: InvitationRecord): Promise<Live | null> {
    const actor = personActor({ personId: invitation.invitedBy, address: null })
    try {
      const vault = await o.domain.locateVault(actor, invitation.vaultId)
      if (!canManageVault(vault.role)) return null
      const inviter = await o.accounts.getAccount(invitation.invitedBy)
      return { invitation, vaultName: vault.name, inviterName: inviter?.name ?? 'an owner', actor }
    } catch (err) {
      if (err instanceof DomainFailure) return null
      throw err
    }
  }

  function notLive(reply: FastifyReply): FastifyReply {
    const body = html`<h1>This invitation link cannot be used</h1>
<p>It was used already, it was revoked, or it has expired (a link works once, for 7 days).</p>
<p>Ask the person who invited you for a new link. If you already have an account, <a href="${base}/login">sign in</a>.</p>`
    return sendPage(reply, 404, 'Invitation not valid', body, base)
  }

  /** The invitation is for an email with an account: its owner joins signed in as themselves. */
  function signInToJoin(reply: FastifyReply, token: string, l: Live, status: number, signedInAs: Person | null): FastifyReply {
    const back = `${base}/login?return_to=${encodeURIComponent(`${base}/invite/${token}`)}`
    const body = html`<h1>Join ${l.vaultName}</h1>
<p>${l.inviterName} invited <span class="email">${l.invitation.email}</span> to the vault <strong>${l.vaultName}</strong> as <span class="role role-${l.invitation.role}">${l.invitation.role}</span>. That address has an account already: sign in as that account to join.</p>
${signedInAs ? html`<p>You are signed in as <span class="email">${signedInAs.email}</span>. <a href="${base}/logout">Sign out</a> first.</p>` : html`<p><a href="${back}">Sign in to join</a></p>`}
<p class="hint">If you never made an account with this address, someone else may have: do not use it, and tell ${l.inviterName} and the server's administrator.</p>`
    return sendPage(reply, status, 'You already have an account', body, base)
  }

  function joinForm(csrf: string, token: string, l: Live): SafeHtml {
    return html`<h1>Join ${l.vaultName}</h1>
<p>${l.inviterName} invited you to the vault <strong>${l.vaultName}</strong> as <span class="role role-${l.invitation.role}">${l.invitation.role}</span>.</p>
<form method="post" action="${`${base}/invite/${token}/join`}" class="stack">
<input type="hidden" name="_csrf" value="${csrf}">
<button type="submit">Join ${l.vaultName}</button>
</form>`
  }

  /** Adds the member as the inviter; false when the inviter lost the right meanwhile (the invitation is used up anyway). */
  async function addAsInviter(request: FastifyRequest, l: Live, invitation: InvitationRecord, email: string): Promise<boolean> {
    try {
      await o.domain.addMember(l.actor, { vaultId: invitation.vaultId, email, role: invitation.role, mode: 'new' })
      return true
    } catch (err) {
      if (!(err instanceof DomainFailure)) throw err
      request.log.warn({ invitation: invitation.id, kind: err.kind }, 'invitation accepted, membership refused')
      return false
    }
  }

  function form(csrf: string, token: string, l: Live, name: string, top: SafeHtml | null): SafeHtml {
    return html`${top}<h1>Join ${l.vaultName}</h1>
<p>${l.inviterName} invited you to the vault <strong>${l.vaultName}</strong> as <span class="role role-${l.invitation.role}">${l.invitation.role}</span>. Choose your name and a password to create your account.</p>
<form method="post" action="${`${base}/invite/${token}`}" class="stack">
<input type="hidden" name="_csrf" value="${csrf}">
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="username" value="${l.invitation.email}" readonly aria-describedby="email-hint">
<p class="hint" id="email-hint">The invitation is for this address.</p>
<label for="name">Name</label>
<input id="name" name="name" type="text" autocomplete="name" required maxlength="100" value="${name}">
${newPasswordFields()}
<button type="submit">Create account and join</button>
</form>`
  }

  app.get<{ Params: { token: string } }>(`${base}/invite/:token`, async function invitePage(request, reply) {
    const token = request.params.token
    const l = await live(token)
    if (!l) return notLive(reply)
    const account = await o.accounts.findAccountByEmail(l.invitation.email)
    if (account) {
      const me = await o.people.currentPerson(request)
      if (me?.id === account.id) return sendPage(reply, 200, `Join ${l.vaultName}`, joinForm(reply.generateCsrf(), token, l), base)
      return signInToJoin(reply, token, l, 200, me)
    }
    return sendPage(reply, 200, `Join ${l.vaultName}`, form(reply.generateCsrf(), request.params.token, l, '', null), base)
  })

  app.post<{ Params: { token: string } }>(`${base}/invite/:token`, { preHandler: app.csrfProtection }, async function acceptInvitation(request, reply) {
    const limited = await tooMany(request, reply)
    if (limited) return limited
    const token = request.params.token
    const l = await live(token)
    if (!l) return notLive(reply)
    const name = field(request.body, 'name').trim()
    const password = field(request.body, 'password')
    const problem = nameProblem(name) ?? newPasswordProblem(request.body)
    if (problem) {
      const f = failure(request, 400, WHAT, 'web app', problem)
      return sendPage(reply, 400, `Join ${l.vaultName}`, form(reply.generateCsrf(), token, l, name, refusalBox(f)), base)
    }
    const accepted = await o.accounts.acceptInvitation(hashToken(token), { id: randomUUID(), name, passwordHash: await hashPassword(password) }, o.now())
    if (!accepted.ok) return accepted.reason === 'email_taken' ? signInToJoin(reply, token, l, 409, await o.people.currentPerson(request)) : notLive(reply)
    const { account, invitation } = accepted
    // the inviter may have lost the right between the check and now: the account stays, without the vault
    const joined = await addAsInviter(request, l, invitation, account.email)
    request.log.info(
      { account: account.id, invitation: invitation.id, vault: invitation.vaultId, emailConfirmed: account.emailConfirmed },
      'invitation accepted',
    )
    await o.people.startSession(request, reply, account.id)
    return reply
      .code(303)
      .header('location', joined ? `${base}/v/${encodeURIComponent(invitation.vaultId)}` : `${base}/`)
      .send()
  })

  // someone with an account joins, signed in as that account (the invitation names their email)
  app.post<{ Params: { token: string } }>(`${base}/invite/:token/join`, { preHandler: app.csrfProtection }, async function joinByLink(request, reply) {
    const limited = await tooMany(request, reply)
    if (limited) return limited
    const token = request.params.token
    const l = await live(token)
    if (!l) return notLive(reply)
    const me = await o.people.currentPerson(request)
    const invitation = me ? await o.accounts.takeInvitationFor(me.id, { tokenHash: hashToken(token) }, o.now()) : null
    if (!me || !invitation) return signInToJoin(reply, token, l, 403, me)
    const joined = await addAsInviter(request, l, invitation, me.email)
    request.log.info({ account: me.id, invitation: invitation.id, vault: invitation.vaultId }, 'invitation accepted')
    return reply
      .code(303)
      .header('location', joined ? `${base}/v/${encodeURIComponent(invitation.vaultId)}` : `${base}/`)
      .send()
  })

  await invitationNotices(app, { ...o, live: liveInvitation, tooMany, addAsInviter })
}

import type {} from '@envkeep/env-api-plugin'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fastifyFormbody from '@fastify/formbody'
import { field, html, personActor, refusalBox, type Domain, type Keyring, type Person, type SafeHtml } from '@envkeep/env-api-plugin'
import type { AccountRecord, AccountStore } from '../accounts/account-store.js'
import { newRecoveryCodes, newTotpSecret, recoveryCodeHash, signinEvent } from '../factors.js'
import type { LocalPeople } from '../people-local.js'
import { hashPassword, verifyPassword } from '../secrets.js'
import { createAttemptLimiter, type AttemptCounters } from './attempt-limiter.js'
import { newPasswordFields, newPasswordProblem } from './new-password.js'
import { failure, formErrorHandler, sendFailurePage, sendPage } from './page-kit.js'
import { addTotp, enrolProblem, recoveryCodesShown, totpEnrolForm } from './second-factor-pages.js'

export interface AccountSettingsOptions {
  readonly accounts: AccountStore
  /** the app's core domain: the person's command-line sign-ins are read and revoked through it */
  readonly domain: Pick<Domain, 'listSignIns' | 'revokeOwnSignIns'>
  readonly people: LocalPeople
  readonly keyring: Keyring | null
  readonly basePath: string
  readonly now: () => Date
  readonly requireSecondFactor: boolean
  /** single sign-on: the provider's name and issuer, or null */
  readonly sso?: { readonly name: string; readonly issuer: string } | null
  /** ENVKEEP_PASSWORD_LOGIN: false when a password no longer signs anyone in */
  readonly passwordLogin?: boolean
  readonly attemptsPerMinute?: number
  /** the storage's shared counters (PostgreSQL): limits hold across processes */
  readonly attemptCounters?: AttemptCounters | null
}

const DONE: Record<string, string> = {
  password_changed: 'Your password was changed; your other sessions ended.',
  factor_removed: 'The second factor was removed; your other sessions ended.',
  session_ended: 'The session was ended.',
  linked: 'Your account is linked for single sign-on.',
  passkey_added: 'The passkey was added; your other sessions ended.',
}

function at(d: Date | null): SafeHtml {
  if (!d) return html`<span class="muted">never</span>`
  return html`<time datetime="${d.toISOString()}">${d.toISOString().slice(0, 16).replace('T', ' ')} UTC</time>`
}

/** A short device description from a User-Agent (browser and system), never the whole string. */
export function deviceOf(agent: string | null): string {
  if (!agent) return 'unknown device'
  const browser = /Edg\//.test(agent)
    ? 'Edge'
    : /Firefox\//.test(agent)
      ? 'Firefox'
      : /Chrom(e|ium)\//.test(agent)
        ? 'Chrome'
        : /Safari\//.test(agent)
          ? 'Safari'
          : /envkeep/i.test(agent)
            ? 'envkeep'
            : 'a browser'
  const system = /Windows/.test(agent)
    ? 'Windows'
    : /Android/.test(agent)
      ? 'Android'
      : /iPhone|iPad/.test(agent)
        ? 'iOS'
        : /Mac OS X/.test(agent)
          ? 'macOS'
          : /Linux/.test(agent)
            ? 'Linux'
            : 'another system'
  return `${browser} on ${system}`
}

/**
 * `/account`: what a person controls of their own sign-in (issue 22): the password, second
 * factors and recovery codes, the web sessions (device, address, last use) beside a link to
 * the command-line sign-ins, ending any session, and signing out everywhere. Changing the
 * password or a factor ends the person's other sessions. Every change is a sign-in event.
 */
export async function accountSettingsPages(app: FastifyInstance, o: AccountSettingsOptions): Promise<void> {
  const base = o.basePath
  const limiter = createAttemptLimiter({ kind: 'account', max: o.attemptsPerMinute ?? 10, windowMs: 60_000, now: o.now, counters: o.attemptCounters ?? null })
  await app.register(fastifyFormbody, { bodyLimit: 64 * 1024 })
  const WHAT = 'changing your account'

  app.setErrorHandler(formErrorHandler(base, WHAT))

  /** The signed-in account, or a redirect to sign in (null). */
  async function signedIn(request: FastifyRequest, reply: FastifyReply): Promise<AccountRecord | null> {
    const person: Person | null = await o.people.currentPerson(request)
    const account = person ? await o.accounts.getAccount(person.id) : null
    if (!account)
      void reply
        .code(303)
        .header('location', o.people.signInUrl(`${base}/account`))
        .send()
    return account
  }

  async function page(request: FastifyRequest, reply: FastifyReply, account: AccountRecord, top: SafeHtml | null, status = 200): Promise<FastifyReply> {
    const csrf = reply.generateCsrf()
    const hidden = html`<input type="hidden" name="_csrf" value="${csrf}">`
    const factors = await o.accounts.listFactors(account.id)
    const codesLeft = factors.length > 0 ? await o.accounts.countRecoveryCodes(account.id) : 0
    const sessions = await o.accounts.listSessionsOf(account.id, o.now())
    const mine = o.people.sessionHash(request)
    const now = o.now()
    const cli = (await o.domain.listSignIns(personActor({ personId: account.id }))).filter((c) => c.revokedAt === null && c.expiresAt > now)
    const done = DONE[field(request.query, 'done')]
    const factorRows = factors.map(
      (f) => html`<tr><td data-label="Name">${f.name}</td><td data-label="Kind">${f.kind === 'totp' ? 'authenticator app' : 'passkey'}</td>
<td data-label="Added">${at(f.createdAt)}</td><td data-label="Last used">${at(f.lastUsedAt)}</td>
<td class="actions"><form method="post" action="${base}/account/factors/remove" class="inline" data-confirm="Remove this second factor?">${hidden}<input type="hidden" name="factor" value="${f.id}"><button type="submit" class="danger" aria-label="${`Remove ${f.name}`}">Remove</button></form></td></tr>`,
    )
    const sessionRows = sessions.map(
      (s) => html`<tr><td data-label="Device">${deviceOf(s.userAgent)}</td><td data-label="Address">${s.address ?? ''}</td>
<td data-label="Signed in">${at(s.createdAt)}</td><td data-label="Last use">${at(s.lastUsedAt)}</td>
<td class="actions">${
        s.tokenHash === mine
          ? html`<span class="muted">this browser</span>`
          : html`<form method="post" action="${base}/account/sessions/end" class="inline">${hidden}<input type="hidden" name="session" value="${s.tokenHash}"><button type="submit" class="secondary">End</button></form>`
      }</td></tr>`,
    )
    const body = html`${top}${done ? html`<p class="notice" role="status">${done}</p>` : ''}<h1>Your account</h1>
<p><span class="email">${account.email}</span>${account.emailConfirmed ? '' : html` <span class="muted">(email not confirmed)</span>`}</p>
<section class="card" id="factors"><h2>Second factor</h2>
${
  factors.length === 0
    ? html`<p>None yet: your password alone signs you in.</p>`
    : html`<table class="stack"><thead><tr><th>Name</th><th>Kind</th><th>Added</th><th>Last used</th><th></th></tr></thead><tbody>${factorRows}</tbody></table>
<p>${codesLeft} recovery code(s) left.</p>
<form method="post" action="${base}/account/recovery-codes" class="inline" data-confirm="Make new recovery codes? The old ones stop working.">${hidden}<button type="submit" class="secondary">New recovery codes</button></form>`
}
<p><a href="${base}/account/passkey">Add a passkey</a></p>
${o.keyring ? html`<p><a href="${base}/account/totp">Add an authenticator app</a></p>` : html`<p class="hint">The server has no master key, so no authenticator app can be added.</p>`}
</section>
${o.sso ? await ssoSection(account, hidden) : ''}
<section class="card" id="password"><h2>Password</h2>
<form method="post" action="${base}/account/password" class="stack">${hidden}
<label for="current">Current password</label>
<input id="current" name="current" type="password" autocomplete="current-password" required>
${newPasswordFields()}
<button type="submit">Change password</button>
</form></section>
<section class="card" id="sessions"><h2>Web sessions</h2>
<table class="stack"><thead><tr><th>Device</th><th>Address</th><th>Signed in</th><th>Last use</th><th></th></tr></thead><tbody>${sessionRows}</tbody></table>
<h3>Command-line sign-ins</h3>
${
  cli.length === 0
    ? html`<p class="muted">None.</p>`
    : html`<table class="stack"><thead><tr><th>Client</th><th>Signed in</th><th>Last use</th></tr></thead><tbody>${cli.map(
        (c) =>
          html`<tr><td data-label="Client">${c.clientId}</td><td data-label="Signed in">${at(c.createdAt)}</td><td data-label="Last use">${at(c.lastUsedAt)}</td></tr>`,
      )}</tbody></table>`
}
<p>Revoke one on <a href="${base}/sign-ins">Sign-ins</a>.</p>
<form method="post" action="${base}/account/sessions/end-all" data-confirm="Sign out everywhere? Every browser and command line signed in as you must sign in again.">${hidden}<button type="submit" class="danger">Sign out everywhere</button></form>
</section>`
    return sendPage(reply, status, 'Your account', body, base)
  }

  async function ssoSection(account: AccountRecord, hidden: SafeHtml): Promise<SafeHtml> {
    const sso = o.sso!
    const linked = (await o.accounts.identityOf(account.id, sso.issuer)) !== null
    return html`<section class="card" id="sso"><h2>Single sign-on</h2>
${
  linked
    ? html`<p>Linked: you can sign in with ${sso.name}.</p>`
    : html`<form method="post" action="${base}/account/oidc/link">${hidden}<button type="submit" class="secondary">Link ${sso.name}</button></form>`
}</section>`
  }

  const back = (reply: FastifyReply, done: string) => reply.code(303).header('location', `${base}/account?done=${done}`).send()

  app.get(`${base}/account`, async function accountPage(request, reply) {
    const account = await signedIn(request, reply)
    return account ? page(request, reply, account, null) : reply
  })

  app.post(`${base}/account/password`, { preHandler: app.csrfProtection }, async function changePassword(request, reply) {
    const account = await signedIn(request, reply)
    if (!account) return reply
    const r = await limiter.take(request.ip)
    const wrong = !r.ok || !(await verifyPassword(account.passwordHash, field(request.body, 'current')))
    const problem = wrong ? 'the current password is wrong' : newPasswordProblem(request.body)
    if (problem) {
      if (wrong) await signinEvent(o.accounts, request, account.id, 'signin_failed', 'password (changing it)', o.now())
      return page(request, reply, account, refusalBox(failure(request, wrong ? 403 : 400, 'changing your password', 'web app', problem)), wrong ? 403 : 400)
    }
    await o.accounts.setPasswordHash(account.id, await hashPassword(field(request.body, 'password')))
    await o.accounts.deleteOtherSessions(account.id, o.people.sessionHash(request))
    await signinEvent(o.accounts, request, account.id, 'password_changed', null, o.now())
    return back(reply, 'password_changed')
  })

  app.get(`${base}/account/totp`, async function addTotpPage(request, reply) {
    const account = await signedIn(request, reply)
    if (!account) return reply
    const body = html`<h1>Add an authenticator app</h1>${totpEnrolForm(`${base}/account/totp`, reply.generateCsrf(), newTotpSecret(), account.email, null)}`
    return sendPage(reply, 200, 'Add an authenticator app', body, base)
  })

  app.post(`${base}/account/totp`, { preHandler: app.csrfProtection }, async function addTotpSubmit(request, reply) {
    const account = await signedIn(request, reply)
    if (!account) return reply
    const keyring = o.keyring
    if (!keyring) return sendFailurePage(reply, failure(request, 503, 'adding a second factor', 'web app', 'the server has no master key'), base)
    const secret = field(request.body, 'secret')
    const r = await limiter.take(request.ip)
    const problem = r.ok ? enrolProblem(secret, field(request.body, 'code'), o.now()) : 'too many attempts; wait a minute'
    if (problem) {
      const top = refusalBox(failure(request, 400, 'adding a second factor', 'web app', problem))
      const body = html`<h1>Add an authenticator app</h1>${totpEnrolForm(`${base}/account/totp`, reply.generateCsrf(), /^[A-Z2-7]{32}$/.test(secret) ? secret : newTotpSecret(), account.email, top)}`
      return sendPage(reply, 400, 'Add an authenticator app', body, base)
    }
    const codes = await addTotp({ accounts: o.accounts, keyring, now: o.now }, request, account.id, secret, field(request.body, 'name'))
    await o.accounts.deleteOtherSessions(account.id, o.people.sessionHash(request))
    return sendPage(
      reply,
      200,
      'Recovery codes',
      html`<h1>Authenticator app added</h1><p>Your other sessions ended.</p>${recoveryCodesShown(codes, `${base}/account`)}`,
      base,
    )
  })

  app.post(`${base}/account/recovery-codes`, { preHandler: app.csrfProtection }, async function newCodes(request, reply) {
    const account = await signedIn(request, reply)
    if (!account) return reply
    if ((await o.accounts.listFactors(account.id)).length === 0) return back(reply, '')
    const codes = newRecoveryCodes()
    await o.accounts.replaceRecoveryCodes(account.id, codes.map(recoveryCodeHash))
    await signinEvent(o.accounts, request, account.id, 'factor_added', 'recovery codes (new set)', o.now())
    return sendPage(reply, 200, 'Recovery codes', html`<h1>New recovery codes</h1>${recoveryCodesShown(codes, `${base}/account`)}`, base)
  })

  app.post(`${base}/account/factors/remove`, { preHandler: app.csrfProtection }, async function removeFactor(request, reply) {
    const account = await signedIn(request, reply)
    if (!account) return reply
    const factors = await o.accounts.listFactors(account.id)
    const factor = factors.find((f) => f.id === field(request.body, 'factor'))
    if (!factor) return back(reply, '')
    if (o.requireSecondFactor && factors.length === 1) {
      const f = failure(request, 409, 'removing a second factor', 'web app', 'this server requires a second factor: add another one before removing this one')
      return page(request, reply, account, refusalBox(f), 409)
    }
    // the last way to sign in stays: with password sign-in off and no SSO link, the last passkey is it
    const passkeysLeft = factors.filter((f) => f.kind === 'passkey' && f.id !== factor.id).length
    const ssoLinked = o.sso ? (await o.accounts.identityOf(account.id, o.sso.issuer)) !== null : false
    if (factor.kind === 'passkey' && o.passwordLogin === false && !ssoLinked && passkeysLeft === 0) {
      const f = failure(
        request,
        409,
        'removing a passkey',
        'web app',
        'this passkey is your last way to sign in; link single sign-on or add another passkey first',
      )
      return page(request, reply, account, refusalBox(f), 409)
    }
    await o.accounts.removeFactor(account.id, factor.id)
    if (factors.length === 1) await o.accounts.replaceRecoveryCodes(account.id, [])
    await o.accounts.deleteOtherSessions(account.id, o.people.sessionHash(request))
    await signinEvent(o.accounts, request, account.id, 'factor_removed', factor.kind, o.now())
    return back(reply, 'factor_removed')
  })

  app.post(`${base}/account/sessions/end`, { preHandler: app.csrfProtection }, async function endSession(request, reply) {
    const account = await signedIn(request, reply)
    if (!account) return reply
    const hash = field(request.body, 'session')
    if (/^[0-9a-f]{64}$/.test(hash) && (await o.accounts.deleteSessionOf(account.id, hash)))
      await signinEvent(o.accounts, request, account.id, 'sessions_ended', 'one web session', o.now())
    return back(reply, 'session_ended')
  })

  app.post(`${base}/account/sessions/end-all`, { preHandler: app.csrfProtection }, async function signOutEverywhere(request, reply) {
    const account = await signedIn(request, reply)
    if (!account) return reply
    const cli = await o.domain.revokeOwnSignIns(personActor({ personId: account.id }))
    const web = await o.accounts.deleteOtherSessions(account.id, null)
    await signinEvent(o.accounts, request, account.id, 'sessions_ended', `everywhere: ${web} web, ${cli} command line`, o.now())
    await o.people.endSession(request, reply)
    return reply.code(303).header('location', `${base}/login`).send()
  })
}

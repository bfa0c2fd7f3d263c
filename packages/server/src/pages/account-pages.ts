import type {} from '@envkeep/env-api-plugin'
import { randomUUID } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fastifyFormbody from '@fastify/formbody'
import { field, html, refusalBox, type SafeHtml } from '@envkeep/env-api-plugin'
import type { AccountStore } from '../accounts/account-store.js'
import type { LocalPeople } from '../people-local.js'
import { signinEvent } from '../factors.js'
import { hashPassword, hashToken, verifyPassword } from '../secrets.js'
import { createAttemptLimiter, createLoginBackoff, type AttemptCounters } from './attempt-limiter.js'
import { afterSignIn } from './invitation-notices.js'
import { newPasswordFields, newPasswordProblem } from './new-password.js'
import { failure, formErrorHandler, safeReturnTo, sendFailurePage, sendPage } from './page-kit.js'

export interface AccountPagesOptions {
  readonly accounts: AccountStore
  readonly people: LocalPeople
  readonly basePath: string
  readonly now: () => Date
  /** sign-in and setup attempts per client address per minute. Default 10. */
  readonly attemptsPerMinute?: number
  /** ENVKEEP_REQUIRE_SECOND_FACTOR: a password account without a factor adds one at sign-in */
  readonly requireSecondFactor?: boolean
  /** single sign-on: the button's label (ENVKEEP_OIDC_NAME), or null without SSO */
  readonly ssoName?: string | null
  /** ENVKEEP_PASSWORD_LOGIN=false: the password form is gone and its POST refused */
  readonly passwordLogin?: boolean
  /** the storage's shared counters (PostgreSQL): limits and back-off hold across processes */
  readonly attemptCounters?: AttemptCounters | null
}

const EMAIL_RE = /^[^\s@\p{Cc}\p{Cf}]+@[^\s@\p{Cc}\p{Cf}]+$/u

export function emailProblem(email: string): string | null {
  if (email.length < 3 || email.length > 254 || !EMAIL_RE.test(email)) return 'the email address is not valid'
  return null
}

export function nameProblem(name: string): string | null {
  if (name.length < 1 || name.length > 100) return 'a name must be 1 to 100 characters'
  // it goes into emails and pages: no line breaks, tabs or invisible direction marks (issue 25)
  if (/[\p{Cc}\p{Cf}\u2028\u2029]/u.test(name)) return 'a name cannot hold line breaks, tabs or other control characters'
  return null
}

/**
 * The server's own pages: `/setup` (first owner, once), `/login` and
 * `/logout`. Encapsulated with their own form parser; CSRF comes from the
 * root instance (registered before the plugin, which reuses it).
 */
export async function accountPages(app: FastifyInstance, o: AccountPagesOptions): Promise<void> {
  const base = o.basePath
  const counters = o.attemptCounters ?? null
  const limiter = createAttemptLimiter({ kind: 'sign-in', max: o.attemptsPerMinute ?? 10, windowMs: 60_000, now: o.now, counters })
  const backoff = createLoginBackoff({ kind: 'login', now: o.now, counters })
  await app.register(fastifyFormbody, { bodyLimit: 64 * 1024 })

  app.setErrorHandler(
    formErrorHandler(base, (request) =>
      request.url.startsWith(`${base}/setup`) ? 'creating the first account' : request.url.startsWith(`${base}/logout`) ? 'signing out' : 'signing in',
    ),
  )

  async function tooMany(request: FastifyRequest, reply: FastifyReply, what: string): Promise<FastifyReply | null> {
    const r = await limiter.take(request.ip)
    if (r.ok) return null
    reply.header('retry-after', String(r.retryAfterSeconds))
    return sendFailurePage(reply, failure(request, 429, what, 'rate limit', `too many attempts from this address; wait ${r.retryAfterSeconds} seconds`), base)
  }

  // ---- /setup: the first owner -------------------------------------------------

  function setupForm(csrf: string, token: string, values: { email: string; name: string }, top: SafeHtml | null): SafeHtml {
    return html`${top}<h1>Create the first account</h1>
<p>This account will own the first vaults. The link works once.</p>
<form method="post" action="${base}/setup" class="stack">
<input type="hidden" name="_csrf" value="${csrf}">
<input type="hidden" name="token" value="${token}">
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="username" required value="${values.email}">
<label for="name">Name</label>
<input id="name" name="name" type="text" autocomplete="name" required value="${values.name}">
${newPasswordFields()}
<button type="submit">Create account</button>
</form>`
  }

  /** A setup token of the right form whose hash is stored and not yet used or expired. */
  async function setupTokenLive(token: string): Promise<boolean> {
    return /^[A-Za-z0-9_-]{43}$/.test(token) && (await o.accounts.isSetupTokenLive(hashToken(token), o.now()))
  }

  async function setupLinkRefused(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const done = (await o.accounts.countAccounts()) > 0
    const why = done
      ? 'the first account exists already; sign in instead'
      : 'this setup link is not valid: it was used, it expired, or a newer link was printed when the server started'
    return sendFailurePage(reply, failure(request, 404, 'opening the setup page', 'web app', why), base)
  }

  app.get(`${base}/setup`, async function setupPage(request, reply) {
    const token = field(request.query, 'token')
    if (!(await setupTokenLive(token))) return setupLinkRefused(request, reply)
    const csrf = reply.generateCsrf()
    return sendPage(reply, 200, 'Set up envkeep', setupForm(csrf, token, { email: '', name: '' }, null), base)
  })

  app.post(`${base}/setup`, { preHandler: app.csrfProtection }, async function setupSubmit(request, reply) {
    const limited = await tooMany(request, reply, 'creating the first account')
    if (limited) return limited
    const token = field(request.body, 'token')
    const email = field(request.body, 'email').trim()
    const name = field(request.body, 'name').trim()
    const password = field(request.body, 'password')
    if (!(await setupTokenLive(token))) return setupLinkRefused(request, reply)
    const problem = emailProblem(email) ?? nameProblem(name) ?? newPasswordProblem(request.body)
    if (problem) {
      const f = failure(request, 400, 'creating the first account', 'web app', problem)
      return sendPage(reply, 400, 'Set up envkeep', setupForm(reply.generateCsrf(), token, { email, name }, refusalBox(f)), base)
    }
    const account = await o.accounts.createFirstAccount(
      hashToken(token),
      { id: randomUUID(), email, name, passwordHash: await hashPassword(password) },
      o.now(),
    )
    if (!account) return setupLinkRefused(request, reply)
    request.log.info({ account: account.id }, 'first account created')
    await o.people.startSession(request, reply, account.id)
    return reply.code(303).header('location', `${base}/`).send()
  })

  // ---- /login ------------------------------------------------------------------

  const passwordLogin = o.passwordLogin !== false
  function loginForm(csrf: string, returnTo: string, email: string, top: SafeHtml | null): SafeHtml {
    const sso = o.ssoName
      ? html`<p><a class="button" id="sso" href="${`${base}/login/oidc?return_to=${encodeURIComponent(returnTo)}`}">Sign in with ${o.ssoName}</a></p>`
      : ''
    const passkey = html`<p><a class="button" id="passkey" href="${base}/login/passkey">Sign in with a passkey</a></p>`
    if (!passwordLogin) return html`${top}<h1>Sign in</h1>${sso}${passkey}`
    return html`${top}<h1>Sign in</h1>${sso}
<form method="post" action="${base}/login" class="stack">
<input type="hidden" name="_csrf" value="${csrf}">
<input type="hidden" name="return_to" value="${returnTo}">
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="username" required value="${email}">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required>
<button type="submit">Sign in</button>
</form>
${passkey}`
  }

  app.get(`${base}/login`, async function loginPage(request, reply) {
    const returnTo = safeReturnTo(field(request.query, 'return_to'), base)
    return sendPage(reply, 200, 'Sign in', loginForm(reply.generateCsrf(), returnTo, '', null), base)
  })

  app.post(`${base}/login`, { preHandler: app.csrfProtection }, async function loginSubmit(request, reply) {
    const limited = await tooMany(request, reply, 'signing in')
    if (limited) return limited
    if (!passwordLogin) {
      const f = failure(request, 403, 'signing in', 'web app', `password sign-in is turned off on this server; sign in with ${o.ssoName ?? 'single sign-on'}`)
      return sendPage(reply, 403, 'Sign in', loginForm(reply.generateCsrf(), `${base}/`, '', refusalBox(f)), base)
    }
    const email = field(request.body, 'email').trim()
    const password = field(request.body, 'password')
    const returnTo = safeReturnTo(field(request.body, 'return_to'), base)
    // per account, from any address: slows guessing, never locks the owner out for long
    const wait = await backoff.wait(email)
    if (wait !== null) {
      reply.header('retry-after', String(wait))
      const f = failure(request, 429, 'signing in', 'rate limit', `too many wrong passwords for this email; wait ${wait} seconds and try again`)
      return sendPage(reply, 429, 'Sign in', loginForm(reply.generateCsrf(), returnTo, email, refusalBox(f)), base)
    }
    const account = email.length > 0 && email.length <= 254 ? await o.accounts.findAccountByEmail(email) : null
    // A wrong email costs one verification too, and both answer the same.
    const ok = (await verifyPassword(account?.passwordHash ?? null, password)) && account !== null
    if (!ok || !account) {
      await backoff.failed(email)
      await signinEvent(o.accounts, request, account?.id ?? null, 'signin_failed', account ? 'password' : 'unknown email', o.now())
      const f = failure(request, 401, 'signing in', 'web app', 'the email or the password is wrong')
      return sendPage(reply, 401, 'Sign in', loginForm(reply.generateCsrf(), returnTo, email, refusalBox(f)), base)
    }
    await backoff.succeeded(email)
    // a second factor is asked (or, when the server requires one, added) before any session exists
    if (o.requireSecondFactor || (await o.accounts.listFactors(account.id)).length > 0) {
      await o.people.startPending(reply, account.id, returnTo)
      return reply.code(303).header('location', `${base}/login/second-factor`).send()
    }
    await o.people.startSession(request, reply, account.id)
    await signinEvent(o.accounts, request, account.id, 'signin_succeeded', 'password', o.now())
    // invitations waiting for this email: the person is told before going on (issue 25)
    return reply
      .code(303)
      .header('location', await afterSignIn(o.accounts, base, account.email, returnTo, o.now()))
      .send()
  })

  // ---- /logout -----------------------------------------------------------------

  app.get(`${base}/logout`, async function logoutPage(_request, reply) {
    const body = html`<h1>Sign out</h1>
<form method="post" action="${base}/logout">
<input type="hidden" name="_csrf" value="${reply.generateCsrf()}">
<button type="submit">Sign out</button>
</form>`
    return sendPage(reply, 200, 'Sign out', body, base)
  })

  app.post(`${base}/logout`, { preHandler: app.csrfProtection }, async function logoutSubmit(request, reply) {
    await o.people.endSession(request, reply)
    return reply.code(303).header('location', `${base}/login`).send()
  })
}

import type {} from '@envkeep/env-api-plugin'
import { randomUUID } from 'node:crypto'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fastifyFormbody from '@fastify/formbody'
import { field, html, refusalBox, StorageError, type SafeHtml } from '@envkeep/env-api-plugin'
import type { AccountStore } from '../accounts/account-store.js'
import type { LocalPeople } from '../people-local.js'
import { hashPassword, hashToken, verifyPassword } from '../secrets.js'
import { createAttemptLimiter, createLoginBackoff, type AttemptCounters } from './attempt-limiter.js'
import { newPasswordFields, newPasswordProblem } from './new-password.js'
import { failure, safeReturnTo, sendFailurePage, sendPage, type Failure } from './page-kit.js'

export interface AccountPagesOptions {
  readonly accounts: AccountStore
  readonly people: LocalPeople
  readonly basePath: string
  readonly now: () => Date
  /** sign-in and setup attempts per client address per minute. Default 10. */
  readonly attemptsPerMinute?: number
  /** the storage's shared counters (PostgreSQL): limits and back-off hold across processes */
  readonly attemptCounters?: AttemptCounters | null
}

const EMAIL_RE = /^[^\s@]+@[^\s@]+$/

function emailProblem(email: string): string | null {
  if (email.length < 3 || email.length > 254 || !EMAIL_RE.test(email)) return 'the email address is not valid'
  return null
}

export function nameProblem(name: string): string | null {
  if (name.length < 1 || name.length > 100) return 'a name must be 1 to 100 characters'
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

  app.setErrorHandler(function accountPageError(err: FastifyError, request, reply) {
    const what = request.url.startsWith(`${base}/setup`)
      ? 'creating the first account'
      : request.url.startsWith(`${base}/logout`)
        ? 'signing out'
        : 'signing in'
    let f: Failure
    if (err.code === 'FST_CSRF_INVALID_TOKEN' || err.code === 'FST_CSRF_MISSING_SECRET')
      f = failure(request, 403, what, 'web app', 'the form was not sent from this site or has gone stale; reload the page and try again')
    else if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') f = failure(request, 413, what, 'web app', 'the form is larger than the server accepts')
    else if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE')
      f = failure(request, 400, what, 'web app', 'the form must be sent as application/x-www-form-urlencoded')
    else if (err instanceof StorageError) f = failure(request, err.status, what, 'database', err.message, err)
    else f = failure(request, 500, what, 'web app', 'an internal error occurred; quote the reference in a report', err)
    return sendFailurePage(reply, f, base)
  })

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

  function loginForm(csrf: string, returnTo: string, email: string, top: SafeHtml | null): SafeHtml {
    return html`${top}<h1>Sign in</h1>
<form method="post" action="${base}/login" class="stack">
<input type="hidden" name="_csrf" value="${csrf}">
<input type="hidden" name="return_to" value="${returnTo}">
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="username" required value="${email}">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required>
<button type="submit">Sign in</button>
</form>`
  }

  app.get(`${base}/login`, async function loginPage(request, reply) {
    const returnTo = safeReturnTo(field(request.query, 'return_to'), base)
    return sendPage(reply, 200, 'Sign in', loginForm(reply.generateCsrf(), returnTo, '', null), base)
  })

  app.post(`${base}/login`, { preHandler: app.csrfProtection }, async function loginSubmit(request, reply) {
    const limited = await tooMany(request, reply, 'signing in')
    if (limited) return limited
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
      const f = failure(request, 401, 'signing in', 'web app', 'the email or the password is wrong')
      return sendPage(reply, 401, 'Sign in', loginForm(reply.generateCsrf(), returnTo, email, refusalBox(f)), base)
    }
    await backoff.succeeded(email)
    await o.people.startSession(request, reply, account.id)
    return reply.code(303).header('location', returnTo).send()
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

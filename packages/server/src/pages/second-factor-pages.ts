import type {} from '@envkeep/env-api-plugin'
import { randomUUID } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fastifyFormbody from '@fastify/formbody'
import { field, html, refusalBox, type Keyring, type SafeHtml } from '@envkeep/env-api-plugin'
import type { AccountStore } from '../accounts/account-store.js'
import type { LocalPeople } from '../people-local.js'
import { checkSecondFactorCode, newRecoveryCodes, newTotpSecret, recoveryCodeHash, sealTotpSecret, signinEvent, totpFor, totpStep } from '../factors.js'
import { createAttemptLimiter, createLoginBackoff, type AttemptCounters } from './attempt-limiter.js'
import { afterSignIn } from './invitation-notices.js'
import { failure, formErrorHandler, sendFailurePage, sendPage } from './page-kit.js'

export interface SecondFactorPagesOptions {
  readonly accounts: AccountStore
  readonly people: LocalPeople
  readonly keyring: Keyring | null
  readonly basePath: string
  readonly now: () => Date
  readonly attemptsPerMinute?: number
  /** the storage's shared counters (PostgreSQL): limits and back-off hold across processes */
  readonly attemptCounters?: AttemptCounters | null
  /** the "Use a passkey" form for an account (passkey-pages), or null when it has none */
  readonly passkeyForm?: (accountId: string, csrf: string) => Promise<SafeHtml | null>
}

const WHAT = 'signing in'

/** The form that adds an authenticator app: its secret to type (or the otpauth URI), and one code to prove it. */
export function totpEnrolForm(action: string, csrf: string, secret: string, label: string, top: SafeHtml | null): SafeHtml {
  const uri = totpFor(secret, label).toString()
  return html`${top}<p>Add this key to an authenticator app (any app that supports TOTP), then type the 6-digit code it shows.</p>
<p>Key: <code class="value" id="totp-secret">${secret}</code> <button type="button" class="copy secondary" data-copy="totp-secret" aria-label="Copy the key">Copy</button></p>
<p class="hint">Or open this in the app: <code class="value" id="totp-uri">${uri}</code></p>
<form method="post" action="${action}" class="stack">
<input type="hidden" name="_csrf" value="${csrf}">
<input type="hidden" name="secret" value="${secret}">
<label for="factor-name">Name</label>
<input id="factor-name" name="name" type="text" maxlength="60" value="Authenticator app">
<label for="code">Code from the app</label>
<input id="code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9 ]*" required>
<button type="submit">Add</button>
</form>`
}

/** The ten recovery codes, shown once. */
export function recoveryCodesShown(codes: readonly string[], next: string): SafeHtml {
  return html`<section class="card" id="recovery-codes" role="status">
<h2>Your recovery codes</h2>
<p>Each works once, in place of a code from your app, if you lose it. Keep them somewhere safe: they are shown only now.</p>
<ul class="recovery-codes">${codes.map((c) => html`<li><code class="value">${c}</code></li>`)}</ul>
</section>
<p><a href="${next}">Continue</a></p>`
}

/** Checks an enrolment: the secret is one this page could have made, and the code matches it now. */
export function enrolProblem(secret: string, code: string, now: Date): string | null {
  if (!/^[A-Z2-7]{32}$/.test(secret)) return 'the form was changed; start again'
  if (totpStep(secret, code.replace(/\s/g, ''), now) === null) return 'that code does not match; check the time on your phone and type the newest code'
  return null
}

/** Adds an authenticator app (sealed) and fresh recovery codes; returns the codes to show once. */
export async function addTotp(
  o: { accounts: AccountStore; keyring: Keyring; now: () => Date },
  request: FastifyRequest,
  accountId: string,
  secret: string,
  name: string,
): Promise<string[]> {
  const id = randomUUID()
  const now = o.now()
  await o.accounts.addFactor(
    {
      id,
      accountId,
      kind: 'totp',
      name: name.trim().slice(0, 60) || 'Authenticator app',
      sealedSecret: await sealTotpSecret(o.keyring, accountId, id, secret),
    },
    now,
  )
  // the code that proved the enrolment cannot be used again to sign in
  const step = totpStep(secret, field(request.body, 'code').replace(/\s/g, ''), now)
  if (step !== null) await o.accounts.useTotpStep(id, step, now)
  const codes = newRecoveryCodes()
  await o.accounts.replaceRecoveryCodes(accountId, codes.map(recoveryCodeHash))
  await signinEvent(o.accounts, request, accountId, 'factor_added', 'totp', now)
  return codes
}

/**
 * `/login/second-factor`: the second step of a password sign-in (issue 22). The password was
 * right and a pending sign-in (its own short-lived cookie) names the account; no session
 * exists yet. The person types a code from their authenticator app or a recovery code; with
 * `ENVKEEP_REQUIRE_SECOND_FACTOR` and no factor yet, they add an app here first. Attempts go
 * through the address limiter and the per-account back-off; a wrong code is refused with the
 * words of every failed sign-in, and logged as a failure of the second factor.
 */
export async function secondFactorPages(app: FastifyInstance, o: SecondFactorPagesOptions): Promise<void> {
  const base = o.basePath
  const counters = o.attemptCounters ?? null
  const limiter = createAttemptLimiter({ kind: 'second-factor', max: o.attemptsPerMinute ?? 10, windowMs: 60_000, now: o.now, counters })
  // per account, from any address: codes are guessed no faster than passwords
  const backoff = createLoginBackoff({ kind: 'second-factor', now: o.now, counters })
  await app.register(fastifyFormbody, { bodyLimit: 64 * 1024 })

  app.setErrorHandler(formErrorHandler(base, WHAT))

  const path = `${base}/login/second-factor`
  const restart = (reply: FastifyReply) => reply.code(303).header('location', `${base}/login`).send()

  function codeForm(csrf: string, top: SafeHtml | null, passkey: SafeHtml | null = null): SafeHtml {
    return html`${top}<h1>Second step</h1>${passkey}
<form method="post" action="${path}" class="stack">
<input type="hidden" name="_csrf" value="${csrf}">
<label for="code">Code from your authenticator app, or a recovery code</label>
<input id="code" name="code" type="text" autocomplete="one-time-code" required autofocus>
<button type="submit">Sign in</button>
</form>
<p><a href="${base}/login">Start again</a></p>`
  }

  function enrolPage(reply: FastifyReply, email: string, secret: string, top: SafeHtml | null, status = 200): FastifyReply {
    const body = html`<h1>Add a second factor</h1>
<p>This server asks every account for a second factor.</p>
${totpEnrolForm(`${path}/enrol`, reply.generateCsrf(), secret, email, top)}`
    return sendPage(reply, status, 'Add a second factor', body, base)
  }

  async function tooMany(request: FastifyRequest, reply: FastifyReply, accountId: string): Promise<FastifyReply | null> {
    const r = await limiter.take(request.ip)
    const wait = r.ok ? await backoff.wait(accountId) : r.retryAfterSeconds
    if (wait === null) return null
    reply.header('retry-after', String(wait))
    return sendFailurePage(reply, failure(request, 429, WHAT, 'rate limit', `too many attempts; wait ${wait} seconds`), base)
  }

  app.get(path, async function secondFactorPage(request, reply) {
    const pending = await o.people.pendingOf(request)
    if (!pending) return restart(reply)
    const factors = await o.accounts.listFactors(pending.accountId)
    if (factors.length === 0) {
      const account = await o.accounts.getAccount(pending.accountId)
      if (!o.keyring || !account)
        return sendFailurePage(reply, failure(request, 503, WHAT, 'web app', 'the server has no master key, so no second factor can be added'), base)
      return enrolPage(reply, account.email, newTotpSecret(), null)
    }
    const csrf = reply.generateCsrf()
    return sendPage(reply, 200, 'Second step', codeForm(csrf, null, (await o.passkeyForm?.(pending.accountId, csrf)) ?? null), base)
  })

  app.post(path, { preHandler: app.csrfProtection }, async function secondFactorSubmit(request, reply) {
    const pending = await o.people.pendingOf(request)
    if (!pending) return restart(reply)
    const limited = await tooMany(request, reply, pending.accountId)
    if (limited) return limited
    const how = await checkSecondFactorCode(o.accounts, o.keyring, pending.accountId, field(request.body, 'code'), o.now())
    if (!how) {
      await backoff.failed(pending.accountId)
      await signinEvent(o.accounts, request, pending.accountId, 'signin_failed', 'second factor', o.now())
      const f = failure(request, 401, WHAT, 'web app', 'the sign-in did not succeed; check the code and try again')
      return sendPage(reply, 401, 'Second step', codeForm(reply.generateCsrf(), refusalBox(f)), base)
    }
    return finish(request, reply, pending.tokenHash, how === 'totp' ? 'password+totp' : 'password+recovery code')
  })

  app.post(`${path}/enrol`, { preHandler: app.csrfProtection }, async function secondFactorEnrol(request, reply) {
    const pending = await o.people.pendingOf(request)
    if (!pending) return restart(reply)
    const limited = await tooMany(request, reply, pending.accountId)
    if (limited) return limited
    const account = await o.accounts.getAccount(pending.accountId)
    if (!o.keyring || !account || (await o.accounts.listFactors(account.id)).length > 0) return restart(reply)
    const secret = field(request.body, 'secret')
    const problem = enrolProblem(secret, field(request.body, 'code'), o.now())
    if (problem)
      return enrolPage(
        reply,
        account.email,
        /^[A-Z2-7]{32}$/.test(secret) ? secret : newTotpSecret(),
        refusalBox(failure(request, 400, 'adding a second factor', 'web app', problem)),
        400,
      )
    const codes = await addTotp({ accounts: o.accounts, keyring: o.keyring, now: o.now }, request, account.id, secret, field(request.body, 'name'))
    const taken = await o.accounts.takePendingSignin(pending.tokenHash, o.now())
    if (!taken) return restart(reply)
    await o.people.startSession(request, reply, account.id)
    await signinEvent(o.accounts, request, account.id, 'signin_succeeded', 'password+totp (added)', o.now())
    const next = await afterSignIn(o.accounts, base, account.email, taken.returnTo, o.now())
    return sendPage(reply, 200, 'Recovery codes', html`<h1>Second factor added</h1>${recoveryCodesShown(codes, next)}`, base)
  })

  async function finish(request: FastifyRequest, reply: FastifyReply, tokenHash: string, detail: string): Promise<FastifyReply> {
    const taken = await o.accounts.takePendingSignin(tokenHash, o.now())
    const account = taken ? await o.accounts.getAccount(taken.accountId) : null
    if (!taken || !account) return restart(reply)
    await backoff.succeeded(account.id)
    await o.people.startSession(request, reply, account.id)
    if (detail.endsWith('recovery code')) await signinEvent(o.accounts, request, account.id, 'recovery_code_used', null, o.now())
    await signinEvent(o.accounts, request, account.id, 'signin_succeeded', detail, o.now())
    return reply
      .code(303)
      .header('location', await afterSignIn(o.accounts, base, account.email, taken.returnTo, o.now()))
      .send()
  }
}

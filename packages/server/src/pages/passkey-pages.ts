import type {} from '@envkeep/env-api-plugin'
import { randomUUID } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fastifyFormbody from '@fastify/formbody'
import type { AuthenticationResponseJSON, AuthenticatorTransport, RegistrationResponseJSON } from '@simplewebauthn/server'
import { field, html, loadOnce, refusalBox, type SafeHtml } from '@envkeep/env-api-plugin'
import type { AccountStore } from '../accounts/account-store.js'
import type { FactorRecord } from '../accounts/factor-store.js'
import { signinEvent } from '../factors.js'
import type { LocalPeople } from '../people-local.js'
import { createAttemptLimiter, type AttemptCounters } from './attempt-limiter.js'
import { afterSignIn } from './invitation-notices.js'
import { failure, formErrorHandler, sendFailurePage, sendPage } from './page-kit.js'
import { PASSKEY_SCRIPT } from './passkey-script.js'

/**
 * @simplewebauthn/server, loaded at the first passkey request rather than at start: a server
 * whose people never use a passkey does not hold it (about 4.6 MB of heap, issue 20). A load
 * that fails fails that request (a 500 page with its ref) and is tried again by the next one.
 */
const webauthn = loadOnce(() => import('@simplewebauthn/server'))

export interface PasskeyPagesOptions {
  readonly accounts: AccountStore
  readonly people: LocalPeople
  readonly baseUrl: string
  readonly basePath: string
  readonly now: () => Date
  readonly attemptsPerMinute?: number
  /** the storage's shared counters (PostgreSQL): limits hold across processes */
  readonly attemptCounters?: AttemptCounters | null
}

const CHALLENGE_TTL_MS = 5 * 60 * 1000
const WHAT = 'using a passkey'

/** The form a page shows to create or use a passkey: the options as JSON, read by passkey.js. */
function passkeyForm(kind: 'create' | 'get', action: string, options: unknown, csrf: string, label: string, extra: SafeHtml | null = null): SafeHtml {
  const json = JSON.stringify(options)
  return html`<form method="post" action="${action}" class="stack" ${kind === 'create' ? html`data-passkey-create="${json}"` : html`data-passkey-get="${json}"`}>
<input type="hidden" name="_csrf" value="${csrf}">
<input type="hidden" name="credential" value="">
${extra}<button type="submit">${label}</button>
<p class="hint" data-passkey-status role="status"></p>
</form>`
}

export function passkeyScriptTag(basePath: string): SafeHtml {
  return html`<script src="${basePath}/login/passkey.js" defer></script>`
}

/** The challenge's bytes: the options carry them base64url-encoded, which is the stored string again. */
function bytes(challenge: string): Uint8Array<ArrayBuffer> {
  return new Uint8Array(Buffer.from(challenge, 'base64url'))
}

function parseCredential<T>(raw: string): T | null {
  if (raw.length === 0 || raw.length > 16_384) return null
  try {
    const v = JSON.parse(raw) as { id?: unknown; response?: unknown }
    return typeof v === 'object' && v !== null && typeof v.id === 'string' && typeof v.response === 'object' ? (v as T) : null
  } catch {
    return null
  }
}

/** What both the passkey pages and the second step need: stored challenges and request options. */
export function createPasskeyKit(o: { accounts: AccountStore; baseUrl: string; basePath: string; now: () => Date }) {
  const rpID = new URL(o.baseUrl).hostname
  const base = o.basePath

  async function challengeFor(purpose: string, accountId: string | null): Promise<string> {
    const challenge = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64url')
    const now = o.now()
    await o.accounts.createChallenge(challenge, purpose, accountId, now, new Date(now.getTime() + CHALLENGE_TTL_MS))
    return challenge
  }

  /** Authentication options for a sign-in (no allowCredentials: the browser offers its discoverable passkeys) or a second step. */
  async function requestOptions(purpose: 'login' | 'factor', accountId: string | null, passkeys: readonly FactorRecord[]) {
    const { generateAuthenticationOptions } = await webauthn()
    return generateAuthenticationOptions({
      rpID,
      challenge: bytes(await challengeFor(purpose, accountId)),
      userVerification: 'required',
      allowCredentials: passkeys.map((p) => ({ id: p.credentialId!, transports: p.transports as AuthenticatorTransport[] })),
    })
  }

  /** The "Use a passkey" form of the second step, or null when the account has no passkey. */
  async function factorForm(accountId: string, csrf: string): Promise<SafeHtml | null> {
    const passkeys = (await o.accounts.listFactors(accountId)).filter((f) => f.kind === 'passkey')
    if (passkeys.length === 0) return null
    return html`${passkeyScriptTag(base)}${passkeyForm('get', `${base}/login/second-factor/passkey`, await requestOptions('factor', accountId, passkeys), csrf, 'Use a passkey')}`
  }

  return { challengeFor, requestOptions, factorForm }
}

/**
 * Passkeys (issue 22, WebAuthn through @simplewebauthn/server): added and named on the
 * Account page, used alone to sign in (a discoverable credential: no email typed), or as the
 * second step after a password. The relying party is the base URL's host and origin. Each
 * challenge is stored, handed to one page, and works once; user verification is required; the
 * signature counter is kept. The page's script is a static asset (the strict CSP holds).
 */
export async function passkeyPages(app: FastifyInstance, o: PasskeyPagesOptions): Promise<void> {
  const base = o.basePath
  const rpID = new URL(o.baseUrl).hostname
  const origin = new URL(o.baseUrl).origin
  const limiter = createAttemptLimiter({ kind: 'passkey', max: o.attemptsPerMinute ?? 10, windowMs: 60_000, now: o.now, counters: o.attemptCounters ?? null })
  await app.register(fastifyFormbody, { bodyLimit: 64 * 1024 })

  app.setErrorHandler(formErrorHandler(base, WHAT))

  app.get(`${base}/login/passkey.js`, async function passkeyScript(_request, reply) {
    return reply
      .code(200)
      .type('text/javascript; charset=utf-8')
      .header('cache-control', 'no-cache')
      .header('x-content-type-options', 'nosniff')
      .send(PASSKEY_SCRIPT)
  })

  const { challengeFor, requestOptions } = createPasskeyKit(o)

  /**
   * Verifies an assertion against a stored passkey; the challenge (of `purpose`) is consumed.
   * Returns the passkey's account, or null (unknown passkey, wrong challenge, bad signature).
   */
  async function verifyAssertion(raw: string, purpose: 'login' | 'factor'): Promise<{ accountId: string; challengeAccount: string } | null> {
    const answer = parseCredential<AuthenticationResponseJSON>(raw)
    if (!answer) return null
    const passkey = await o.accounts.findPasskey(answer.id)
    if (!passkey?.publicKey) return null
    const { verifyAuthenticationResponse } = await webauthn()
    let challengeAccount: string | null = null
    try {
      const v = await verifyAuthenticationResponse({
        response: answer,
        expectedChallenge: async (c) => {
          challengeAccount = await o.accounts.takeChallenge(c, purpose, o.now())
          return challengeAccount !== null
        },
        expectedOrigin: origin,
        expectedRPID: rpID,
        requireUserVerification: true,
        credential: {
          id: passkey.credentialId!,
          publicKey: new Uint8Array(Buffer.from(passkey.publicKey, 'base64url')),
          counter: passkey.counter,
          transports: passkey.transports as AuthenticatorTransport[],
        },
      })
      if (!v.verified || challengeAccount === null) return null
      await o.accounts.usePasskey(passkey.id, v.authenticationInfo.newCounter, o.now())
      return { accountId: passkey.accountId, challengeAccount }
    } catch {
      return null
    }
  }

  // ---- sign in with a passkey alone -----------------------------------------------------------

  app.get(`${base}/login/passkey`, async function passkeyLoginPage(_request, reply) {
    const body = html`${passkeyScriptTag(base)}<h1>Sign in with a passkey</h1>
<p>Your browser or device asks which passkey to use; no email needed.</p>
${passkeyForm('get', `${base}/login/passkey`, await requestOptions('login', null, []), reply.generateCsrf(), 'Sign in with a passkey')}
<p><a href="${base}/login">Sign in another way</a></p>`
    return sendPage(reply, 200, 'Sign in with a passkey', body, base)
  })

  app.post(`${base}/login/passkey`, { preHandler: app.csrfProtection }, async function passkeyLogin(request, reply) {
    if (!(await limiter.take(request.ip)).ok)
      return sendFailurePage(reply, failure(request, 429, WHAT, 'rate limit', 'too many attempts from this address; wait a minute'), base)
    const r = await verifyAssertion(field(request.body, 'credential'), 'login')
    if (!r) {
      await signinEvent(o.accounts, request, null, 'signin_failed', 'passkey', o.now())
      return sendFailurePage(reply, failure(request, 401, 'signing in', 'web app', 'the sign-in did not succeed; try again, or sign in another way'), base)
    }
    return signedIn(request, reply, r.accountId, 'passkey', `${base}/`)
  })

  // ---- the second step with a passkey -----------------------------------------------------------

  app.post(`${base}/login/second-factor/passkey`, { preHandler: app.csrfProtection }, async function passkeyFactor(request, reply) {
    const pending = await o.people.pendingOf(request)
    if (!pending) return reply.code(303).header('location', `${base}/login`).send()
    if (!(await limiter.take(request.ip)).ok)
      return sendFailurePage(reply, failure(request, 429, WHAT, 'rate limit', 'too many attempts from this address; wait a minute'), base)
    const r = await verifyAssertion(field(request.body, 'credential'), 'factor')
    if (!r || r.accountId !== pending.accountId || r.challengeAccount !== pending.accountId) {
      await signinEvent(o.accounts, request, pending.accountId, 'signin_failed', 'second factor', o.now())
      return sendFailurePage(reply, failure(request, 401, 'signing in', 'web app', 'the sign-in did not succeed; check the code and try again'), base)
    }
    const taken = await o.accounts.takePendingSignin(pending.tokenHash, o.now())
    if (!taken) return reply.code(303).header('location', `${base}/login`).send()
    return signedIn(request, reply, r.accountId, 'password+passkey', taken.returnTo)
  })

  async function signedIn(request: FastifyRequest, reply: FastifyReply, accountId: string, how: string, returnTo: string): Promise<FastifyReply> {
    const account = await o.accounts.getAccount(accountId)
    if (!account) return reply.code(303).header('location', `${base}/login`).send()
    await o.people.startSession(request, reply, accountId)
    await signinEvent(o.accounts, request, accountId, 'signin_succeeded', how, o.now())
    return reply
      .code(303)
      .header('location', await afterSignIn(o.accounts, base, account.email, returnTo, o.now()))
      .send()
  }

  // ---- add a passkey on the Account page ----------------------------------------------------------

  async function addPage(request: FastifyRequest, reply: FastifyReply, top: SafeHtml | null, status = 200): Promise<FastifyReply> {
    const me = await o.people.currentPerson(request)
    if (!me)
      return reply
        .code(303)
        .header('location', o.people.signInUrl(`${base}/account/passkey`))
        .send()
    const existing = (await o.accounts.listFactors(me.id)).filter((f) => f.kind === 'passkey')
    const { generateRegistrationOptions } = await webauthn()
    const options = await generateRegistrationOptions({
      rpName: 'envkeep',
      rpID,
      userName: me.email,
      userDisplayName: me.name,
      userID: new TextEncoder().encode(me.id),
      challenge: bytes(await challengeFor('register', me.id)),
      attestationType: 'none',
      authenticatorSelection: { residentKey: 'required', userVerification: 'required' },
      excludeCredentials: existing.map((p) => ({ id: p.credentialId!, transports: p.transports as AuthenticatorTransport[] })),
    })
    const name = html`<label for="passkey-name">Name</label>
<input id="passkey-name" name="name" type="text" maxlength="60" value="Passkey" required>`
    const body = html`${passkeyScriptTag(base)}${top}<h1>Add a passkey</h1>
<p>A passkey signs you in with this device's screen lock or a security key, alone or after your password.</p>
${passkeyForm('create', `${base}/account/passkey`, options, reply.generateCsrf(), 'Add a passkey', name)}
<p><a href="${base}/account">Back to your account</a></p>`
    return sendPage(reply, status, 'Add a passkey', body, base)
  }

  app.get(`${base}/account/passkey`, async function addPasskeyPage(request, reply) {
    return addPage(request, reply, null)
  })

  app.post(`${base}/account/passkey`, { preHandler: app.csrfProtection }, async function addPasskey(request, reply) {
    const me = await o.people.currentPerson(request)
    if (!me)
      return reply
        .code(303)
        .header('location', o.people.signInUrl(`${base}/account/passkey`))
        .send()
    const answer = parseCredential<RegistrationResponseJSON>(field(request.body, 'credential'))
    const { verifyRegistrationResponse } = await webauthn()
    let owner: string | null = null
    const v = answer
      ? await verifyRegistrationResponse({
          response: answer,
          expectedChallenge: async (c) => {
            owner = await o.accounts.takeChallenge(c, 'register', o.now())
            return owner === me.id
          },
          expectedOrigin: origin,
          expectedRPID: rpID,
          requireUserVerification: true,
        }).catch(() => null)
      : null
    if (!v?.verified || !v.registrationInfo) {
      const f = failure(request, 400, 'adding a passkey', 'web app', 'the passkey could not be verified; try again')
      return addPage(request, reply, refusalBox(f), 400)
    }
    const c = v.registrationInfo.credential
    await o.accounts.addFactor(
      {
        id: randomUUID(),
        accountId: me.id,
        kind: 'passkey',
        name:
          field(request.body, 'name')
            .replace(/[\p{Cc}\p{Cf}]+/gu, ' ')
            .trim()
            .slice(0, 60) || 'Passkey',
        credentialId: c.id,
        publicKey: Buffer.from(c.publicKey).toString('base64url'),
        counter: c.counter,
        transports: c.transports ?? [],
      },
      o.now(),
    )
    await o.accounts.deleteOtherSessions(me.id, o.people.sessionHash(request))
    await signinEvent(o.accounts, request, me.id, 'factor_added', 'passkey', o.now())
    return reply.code(303).header('location', `${base}/account?done=passkey_added`).send()
  })
}

import type {} from '@envkeep/env-api-plugin'
import { randomUUID, timingSafeEqual } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fastifyFormbody from '@fastify/formbody'
import * as client from 'openid-client'
import { type Domain, field, html, type SafeHtml } from '@envkeep/env-api-plugin'
import type { AccountStore } from '../accounts/account-store.js'
import { signinEvent } from '../factors.js'
import { afterSignIn } from '../pages/invitation-notices.js'
import { failure, formErrorHandler, safeReturnTo, sendPage } from '../pages/page-kit.js'
import type { LocalPeople } from '../people-local.js'
import { hashPassword, hashToken, newToken } from '../secrets.js'
import { applyGroupRules } from './group-rules.js'
import type { OidcClient } from './oidc-client.js'
import type { OidcConfig } from './oidc-config.js'

export interface OidcPagesOptions {
  readonly oidc: OidcConfig | null
  readonly client: OidcClient | null
  readonly accounts: AccountStore
  /** the core's domain: a group rule's memberships go through it */
  readonly domain: Domain
  readonly people: LocalPeople
  readonly baseUrl: string
  readonly basePath: string
  readonly secureCookies: boolean
  readonly now: () => Date
}

const STATE_COOKIE = 'envkeep_oidc'
const STATE_TTL_MS = 10 * 60 * 1000
/** A break-glass link works once, for 15 minutes. */
export const LOGIN_LINK_TTL_MS = 15 * 60 * 1000
const WHAT = 'signing in with single sign-on'

/** The email's domain, lowercase, or null. */
function domainOf(email: string): string | null {
  const at = email.lastIndexOf('@')
  return at > 0 ? email.slice(at + 1).toLowerCase() : null
}

/**
 * Single sign-on by OpenID Connect (issue 22) and the break-glass link: `/login/oidc` starts
 * (authorization code with PKCE, `state` and `nonce`, through openid-client), the redirect
 * URI is `{base_url}/login/oidc/callback` (built from the base URL, never the request), and the
 * callback finds the account by `(iss, sub)`. An account is adopted by email only when the
 * provider says `email_verified` and the domain is allowed; a new one is made only with
 * `ENVKEEP_OIDC_AUTO_CREATE` for an allowed domain; a link never moves. Every refusal is a page
 * in our words; every outcome a sign-in event.
 */
export async function oidcPages(app: FastifyInstance, o: OidcPagesOptions): Promise<void> {
  const base = o.basePath
  const cookiePath = o.secureCookies || base === '' ? '/' : base
  const stateCookie = o.secureCookies ? `__Host-${STATE_COOKIE}` : STATE_COOKIE
  const cookieOptions = { path: cookiePath, httpOnly: true, sameSite: 'lax' as const, secure: o.secureCookies }
  const redirectUri = `${o.baseUrl}/login/oidc/callback`
  await app.register(fastifyFormbody, { bodyLimit: 64 * 1024 })

  app.setErrorHandler(formErrorHandler(base, WHAT))

  /** A refusal page in our words (logged under a ref, as every failure). */
  function refuse(request: FastifyRequest, reply: FastifyReply, status: number, title: string, why: string, more: SafeHtml | null = null): FastifyReply {
    const f = failure(request, status, WHAT, 'single sign-on', why)
    const body = html`<h1>${title}</h1>
<p>${why}.</p>
${more}
<p class="hint">Reference: <code>${f.ref}</code></p>
<p><a href="${base}/login">Back to sign-in</a></p>`
    return sendPage(reply, status, title, body, base)
  }

  // ---- the break-glass link (admin login-link), whether or not SSO is set up ------------------

  const LINK_RE = /^[A-Za-z0-9_-]{43}$/
  app.get<{ Params: { token: string } }>(`${base}/login/link/:token`, async function loginLinkPage(request, reply) {
    const token = request.params.token
    if (!LINK_RE.test(token) || !(await o.accounts.findLoginLink(hashToken(token), o.now())))
      return refuse(request, reply, 404, 'This sign-in link cannot be used', 'it was used already, or it has expired (a link works once, for 15 minutes)')
    const body = html`<h1>Sign in with a one-time link</h1>
<p>The server's administrator made this link for you. It works once.</p>
<form method="post" action="${`${base}/login/link/${token}`}"><input type="hidden" name="_csrf" value="${reply.generateCsrf()}"><button type="submit">Sign in</button></form>`
    return sendPage(reply, 200, 'Sign in', body, base)
  })

  app.post<{ Params: { token: string } }>(`${base}/login/link/:token`, { preHandler: app.csrfProtection }, async function loginLinkUse(request, reply) {
    const token = request.params.token
    const accountId = LINK_RE.test(token) ? await o.accounts.takeLoginLink(hashToken(token), o.now()) : null
    if (!accountId)
      return refuse(request, reply, 404, 'This sign-in link cannot be used', 'it was used already, or it has expired (a link works once, for 15 minutes)')
    await o.people.startSession(request, reply, accountId)
    await signinEvent(o.accounts, request, accountId, 'break_glass_used', null, o.now())
    return reply.code(303).header('location', `${base}/`).send()
  })

  const oidc = o.oidc
  const oc = o.client
  if (!oidc || !oc) return

  async function start(request: FastifyRequest, reply: FastifyReply, returnTo: string, linkAccountId: string | null): Promise<FastifyReply> {
    const cfg = oc!.configuration()
    if (!cfg)
      return refuse(
        request,
        reply,
        503,
        `${oidc!.name} cannot be reached yet`,
        `the server could not reach ${oidc!.name} yet; it keeps trying: wait a minute and try again`,
      )
    const verifier = client.randomPKCECodeVerifier()
    const state = client.randomState()
    const nonce = client.randomNonce()
    const now = o.now()
    await o.accounts.createOidcState(hashToken(state), { verifier, nonce, returnTo, linkAccountId }, now, new Date(now.getTime() + STATE_TTL_MS))
    // maxAge, not expires: relative to the browser's clock
    reply.setCookie(stateCookie, state, { ...cookieOptions, maxAge: STATE_TTL_MS / 1000 })
    const url = client.buildAuthorizationUrl(cfg, {
      redirect_uri: redirectUri,
      scope: oidc!.scopes.join(' '),
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    })
    return reply.code(303).header('location', url.href).send()
  }

  app.get(`${base}/login/oidc`, async function oidcStart(request, reply) {
    return start(request, reply, safeReturnTo(field(request.query, 'return_to'), base), null)
  })

  // linking from a signed-in session (the Account page)
  app.post(`${base}/account/oidc/link`, { preHandler: app.csrfProtection }, async function oidcLink(request, reply) {
    const me = await o.people.currentPerson(request)
    if (!me)
      return reply
        .code(303)
        .header('location', o.people.signInUrl(`${base}/account`))
        .send()
    return start(request, reply, `${base}/account`, me.id)
  })

  app.get(`${base}/login/oidc/callback`, async function oidcCallback(request, reply) {
    const cfg = oc.configuration()
    if (!cfg) return refuse(request, reply, 503, `${oidc.name} cannot be reached yet`, `the server could not reach ${oidc.name}; wait a minute and try again`)
    const state = field(request.query, 'state')
    const cookie = request.cookies?.[stateCookie] ?? ''
    reply.clearCookie(stateCookie, cookieOptions)
    const st = state.length > 0 && state.length <= 200 ? await o.accounts.takeOidcState(hashToken(state), o.now()) : null
    if (!st)
      return refuse(
        request,
        reply,
        400,
        'This sign-in cannot be finished',
        'this answer from the identity provider was used already, or it is too old (a sign-in must finish within 10 minutes); start again',
      )
    const same = cookie.length === state.length && timingSafeEqual(Buffer.from(cookie), Buffer.from(state))
    if (!same)
      return refuse(request, reply, 400, 'This sign-in cannot be finished', 'it was started in another browser (or its cookie is gone); start again here')
    const q = request.url.indexOf('?')
    // the callback URL as registered: from the base URL, never from the request's Host
    const current = new URL(`${redirectUri}${q === -1 ? '' : request.url.slice(q)}`)
    let claims: client.IDToken
    try {
      const tokens = await client.authorizationCodeGrant(cfg, current, {
        pkceCodeVerifier: st.verifier,
        expectedState: state,
        expectedNonce: st.nonce,
        idTokenExpected: true,
      })
      const c = tokens.claims()
      if (!c) throw new Error('no ID token')
      // many providers put email, email_verified and groups only in UserInfo: its `sub` must be the ID token's
      const info = cfg.serverMetadata().userinfo_endpoint ? await client.fetchUserInfo(cfg, tokens.access_token, c.sub) : {}
      claims = { ...info, ...c }
    } catch (err) {
      const e = err as { error?: unknown; code?: unknown }
      request.log.warn(
        { error: typeof e.error === 'string' ? e.error.slice(0, 60) : null, code: typeof e.code === 'string' ? e.code : null },
        'single sign-on: the answer was refused',
      )
      await signinEvent(o.accounts, request, null, 'signin_failed', 'single sign-on: the provider refused or its answer did not verify', o.now())
      return refuse(request, reply, 401, 'Single sign-on did not succeed', `${oidc.name} did not sign you in, or its answer could not be verified; try again`)
    }
    const issuer = claims.iss
    const subject = claims.sub
    const email = typeof claims.email === 'string' ? claims.email.trim() : ''
    const verified = claims.email_verified === true
    const domain = domainOf(email)
    const allowed = domain !== null && oidc.allowedDomains.includes(domain)
    const now = o.now()

    // 1. linking from the Account page: the signed-in account gets this identity, if neither is linked
    if (st.linkAccountId) {
      const me = await o.people.currentPerson(request)
      if (!me || me.id !== st.linkAccountId)
        return refuse(request, reply, 403, 'Not linked', 'you are no longer signed in as the account that asked to link; sign in and try again')
      const owner = await o.accounts.findIdentity(issuer, subject)
      if (owner && owner !== me.id) return refuse(request, reply, 409, 'Not linked', `this ${oidc.name} identity is linked to another account already`)
      if (!owner && !(await o.accounts.linkIdentity(issuer, subject, me.id, now)))
        return refuse(request, reply, 409, 'Not linked', `your account is linked to another ${oidc.name} identity already; a link never moves`)
      if (!owner) await signinEvent(o.accounts, request, me.id, 'link_created', `single sign-on: linked from the Account page`, now)
      return reply.code(303).header('location', `${base}/account?done=linked`).send()
    }

    // 2. a known identity: its account, whatever the email says now
    let accountId = await o.accounts.findIdentity(issuer, subject)
    let how = 'single sign-on'
    if (!accountId) {
      const existing = email !== '' ? await o.accounts.findAccountByEmail(email) : null
      if (existing && (await o.accounts.identityOf(existing.id, issuer)) !== null) {
        await signinEvent(o.accounts, request, existing.id, 'signin_failed', 'single sign-on: another subject for a linked account', now)
        return refuse(
          request,
          reply,
          403,
          'Not signed in',
          `the account with this email is linked to a different ${oidc.name} identity; a link never moves to another identity`,
          html`<p>If your identity at ${oidc.name} was re-created, ask the server's administrator.</p>`,
        )
      }
      if (!verified) {
        await signinEvent(o.accounts, request, existing?.id ?? null, 'signin_failed', 'single sign-on: email not verified', now)
        return refuse(
          request,
          reply,
          403,
          'Not signed in',
          `${oidc.name} does not say your email address is verified, so it cannot stand for an account here`,
          linkHint(),
        )
      }
      if (!allowed) {
        await signinEvent(o.accounts, request, existing?.id ?? null, 'signin_failed', 'single sign-on: domain not allowed', now)
        return refuse(
          request,
          reply,
          403,
          'Not signed in',
          `accounts with an email at ${domain ?? 'that domain'} cannot sign in with ${oidc.name} on this server`,
          linkHint(),
        )
      }
      if (existing) {
        if (!(await o.accounts.linkIdentity(issuer, subject, existing.id, now)))
          return refuse(request, reply, 409, 'Not signed in', 'the account was linked meanwhile; try again')
        accountId = existing.id
        how = 'single sign-on (account adopted by verified email)'
        await signinEvent(o.accounts, request, existing.id, 'link_created', 'single sign-on: adopted by verified email', now)
      } else if (oidc.autoCreate) {
        const name =
          (typeof claims.name === 'string' ? claims.name : email.slice(0, email.indexOf('@')))
            .replace(/[\p{Cc}\p{Cf}\u2028\u2029]+/gu, ' ')
            .trim()
            .slice(0, 100) || email
        const created = await o.accounts.createAccount(
          // no usable password: a random one nobody knows (password sign-in cannot open it)
          { id: randomUUID(), email, name, passwordHash: await hashPassword(newToken()) },
          now,
        )
        await o.accounts.linkIdentity(issuer, subject, created.id, now)
        accountId = created.id
        how = 'single sign-on (account created)'
        await signinEvent(o.accounts, request, created.id, 'link_created', 'single sign-on: account created', now)
      } else {
        await signinEvent(o.accounts, request, null, 'signin_failed', 'single sign-on: no account', now)
        return refuse(request, reply, 403, 'No account', 'there is no account for you on this server yet; ask an owner of a vault to invite you')
      }
    }
    if (oidc.groupRules.length > 0) {
      const raw = (claims as Record<string, unknown>)[oidc.groupsClaim]
      const groups = Array.isArray(raw) ? raw.filter((g): g is string => typeof g === 'string') : []
      await applyGroupRules({ accounts: o.accounts, domain: o.domain, rules: oidc.groupRules, log: request.log }, accountId, groups)
    }
    const account = await o.accounts.getAccount(accountId)
    if (!account) return refuse(request, reply, 404, 'No account', 'the account is gone')
    await o.people.startSession(request, reply, accountId)
    await signinEvent(o.accounts, request, accountId, 'signin_succeeded', how, now)
    return reply
      .code(303)
      .header('location', await afterSignIn(o.accounts, base, account.email, st.returnTo, now))
      .send()
  })

  function linkHint(): SafeHtml {
    return html`<p>If you have an account here, sign in with it another way and link ${oidc!.name} from your Account page.</p>`
  }
}

import type {} from '@fastify/cookie'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { PeopleAdapter, Person } from '@envkeep/env-api-plugin'
import type { AccountRecord, AccountStore } from './accounts/account-store.js'
import { hashToken, newToken } from './secrets.js'

export const SESSION_COOKIE = 'envkeep_session'

/** The session cookie's name: `__Host-envkeep_session` behind https, which no sibling origin can set. */
export function sessionCookieName(secureCookies: boolean): string {
  return secureCookies ? `__Host-${SESSION_COOKIE}` : SESSION_COOKIE
}
/** A web session lasts 14 days from sign-in. */
export const SESSION_TTL_MS = 14 * 24 * 60 * 60 * 1000

export interface LocalPeopleOptions {
  readonly accounts: AccountStore
  /** path part of the base URL ('' at the root) */
  readonly basePath: string
  /** cookies get Secure behind https */
  readonly secureCookies: boolean
  readonly now: () => Date
}

export interface LocalPeople extends PeopleAdapter {
  /** The session cookie's token: the CSRF tokens' binding. */
  sessionBinding(request: FastifyRequest): string | null
  /**
   * Starts a web session for an account: a fresh random token in the cookie, its hash in
   * storage. Any session the browser presented (perhaps one planted by someone else) ends.
   */
  startSession(request: FastifyRequest, reply: FastifyReply, accountId: string): Promise<void>
  /** Ends the session of this browser (if any) and clears the cookie. */
  endSession(request: FastifyRequest, reply: FastifyReply): Promise<void>
  /** The hash of this browser's session token (names "this browser" on the Account page), or null. */
  sessionHash(request: FastifyRequest): string | null
  /** A password was right and a second factor is asked: a short-lived pending sign-in in its own cookie. */
  startPending(reply: FastifyReply, accountId: string, returnTo: string): Promise<void>
  /** The live pending sign-in of this browser, or null. */
  pendingOf(request: FastifyRequest): Promise<{ accountId: string; returnTo: string; tokenHash: string } | null>
  /** Clears the pending sign-in's cookie. */
  endPending(reply: FastifyReply): void
}

export const PENDING_COOKIE = 'envkeep_pending'
/** The second step of a sign-in must follow within 10 minutes. */
export const PENDING_TTL_MS = 10 * 60 * 1000

export function toPerson(a: AccountRecord): Person {
  return { id: a.id, email: a.email, name: a.name }
}

/** Requests that carried the session or CSRF cookie name more than once: signed out. */
const tossed = new WeakSet<FastifyRequest>()

/** How many times each of `names` occurs in a Cookie header (a name is what precedes the first `=`). */
function cookieNameCounts(header: string | undefined, names: readonly string[]): Map<string, number> {
  const counts = new Map<string, number>()
  if (!header) return counts
  for (const part of header.split(';')) {
    const eq = part.indexOf('=')
    const name = (eq === -1 ? part : part.slice(0, eq)).trim()
    if (names.includes(name)) counts.set(name, (counts.get(name) ?? 0) + 1)
  }
  return counts
}

/** `/`, the base path, and every prefix of `path` with and without its trailing slash: each Path a planted cookie could have. */
export function cookiePathVariants(path: string, basePath: string): string[] {
  const out = new Set<string>(['/'])
  if (basePath !== '') out.add(basePath)
  const segments = path
    .split('?')[0]!
    .split('/')
    .filter((x) => x !== '')
    .slice(0, 16)
  let prefix = ''
  for (const seg of segments) {
    prefix += `/${seg}`
    out.add(prefix)
    out.add(`${prefix}/`)
  }
  return [...out]
}

/**
 * Issue 25 (session tossing): over http the session cookie cannot be `__Host-`, so a page on
 * another port of the same host can plant its own `envkeep_session` (or CSRF secret) with a
 * narrower Path, which the browser then sends before ours. A request carrying either name
 * more than once is treated as signed out (neither cookie is believed), and every copy is
 * expired: one Set-Cookie per Path the request could have been sent with. The person signs in
 * again; the planted cookie is gone. An onRequest hook, after @fastify/cookie's parsing.
 */
export function createCookieTossGuard(o: { names: readonly string[]; basePath: string; secureCookies: boolean }) {
  return async function cookieTossGuard(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const counts = cookieNameCounts(request.headers.cookie, o.names)
    if (![...counts.values()].some((n) => n > 1)) return
    tossed.add(request)
    request.log.warn(
      { cookies: [...counts.entries()].filter(([, n]) => n > 1).map(([name]) => name) },
      'cookie name sent more than once: treated as signed out',
    )
    for (const name of o.names) {
      if (request.cookies) delete request.cookies[name]
      for (const path of cookiePathVariants(request.url, o.basePath))
        reply.clearCookie(name, { path, httpOnly: true, sameSite: 'lax', secure: o.secureCookies })
    }
  }
}

/**
 * The plugin's people adapter over local accounts: the person on a
 * browser request is the owner of the live session named by the
 * `envkeep_session` cookie (HttpOnly, SameSite=Lax, Secure behind https).
 */
export function createLocalPeople(o: LocalPeopleOptions): LocalPeople {
  // __Host- cookies must have Path=/; over http the cookie stays under the base path
  const cookiePath = o.secureCookies || o.basePath === '' ? '/' : o.basePath
  const cookieOptions = { path: cookiePath, httpOnly: true, sameSite: 'lax' as const, secure: o.secureCookies }
  const cookieName = sessionCookieName(o.secureCookies)
  const pendingName = o.secureCookies ? `__Host-${PENDING_COOKIE}` : PENDING_COOKIE

  function cookieToken(request: FastifyRequest, name = cookieName): string | null {
    if (tossed.has(request)) return null
    const v = request.cookies?.[name]
    return typeof v === 'string' && /^[A-Za-z0-9_-]{43}$/.test(v) ? v : null
  }

  return {
    async currentPerson(request) {
      const token = cookieToken(request)
      if (!token) return null
      const hash = hashToken(token)
      const session = await o.accounts.findSession(hash, o.now())
      if (!session) return null
      await o.accounts.touchSession(hash, o.now())
      return toPerson(session.account)
    },
    signInUrl(returnTo) {
      return `${o.basePath}/login?return_to=${encodeURIComponent(returnTo)}`
    },
    signOutUrl() {
      return `${o.basePath}/logout`
    },
    accountUrl() {
      return `${o.basePath}/account`
    },
    async getPerson(id) {
      const a = await o.accounts.getAccount(id)
      return a ? toPerson(a) : null
    },
    async findPersonByEmail(email) {
      const a = await o.accounts.findAccountByEmail(email.trim())
      return a ? toPerson(a) : null
    },
    async withoutSecondFactor(personIds) {
      const withFactor = await o.accounts.accountsWithFactor(personIds)
      return new Set(personIds.filter((id) => !withFactor.has(id)))
    },
    sessionBinding(request) {
      return cookieToken(request)
    },
    async startSession(request, reply, accountId) {
      const presented = cookieToken(request)
      if (presented) await o.accounts.deleteSession(hashToken(presented))
      const token = newToken()
      const now = o.now()
      const expires = new Date(now.getTime() + SESSION_TTL_MS)
      await o.accounts.createSession(hashToken(token), accountId, now, expires)
      const agent = request.headers['user-agent']
      await o.accounts.describeSession(
        hashToken(token),
        { userAgent: typeof agent === 'string' ? agent.slice(0, 300) : null, address: request.ip ?? null },
        now,
      )
      reply.setCookie(cookieName, token, { ...cookieOptions, expires })
      reply.clearCookie(pendingName, cookieOptions)
    },
    sessionHash(request) {
      const token = cookieToken(request)
      return token ? hashToken(token) : null
    },
    async startPending(reply, accountId, returnTo) {
      const token = newToken()
      const now = o.now()
      const expires = new Date(now.getTime() + PENDING_TTL_MS)
      await o.accounts.createPendingSignin(hashToken(token), accountId, returnTo, now, expires)
      reply.setCookie(pendingName, token, { ...cookieOptions, maxAge: PENDING_TTL_MS / 1000 })
    },
    async pendingOf(request) {
      const token = cookieToken(request, pendingName)
      if (!token) return null
      const p = await o.accounts.findPendingSignin(hashToken(token), o.now())
      return p ? { ...p, tokenHash: hashToken(token) } : null
    },
    endPending(reply) {
      reply.clearCookie(pendingName, cookieOptions)
    },
    async endSession(request, reply) {
      const token = cookieToken(request)
      if (token) await o.accounts.deleteSession(hashToken(token))
      reply.clearCookie(cookieName, cookieOptions)
    },
  }
}

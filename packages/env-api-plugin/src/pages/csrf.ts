import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import type {} from '@fastify/cookie'
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify'
import fp from 'fastify-plugin'

declare module 'fastify' {
  interface FastifyInstance {
    /** preHandler of every state-changing form: Origin check, then the session-bound token. */
    csrfProtection(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void
  }
  interface FastifyReply {
    /** The `_csrf` token for a form on the page being rendered (sets the secret cookie if absent). */
    generateCsrf(): string
  }
}

export interface CsrfOptions {
  /** The service's base URL: a form's `Origin` must be its origin. */
  readonly baseUrl: string
  /**
   * A secret unique to this browser's sign-in (the session cookie's value), or null before
   * sign-in. Tokens are bound to it, so a secret cookie planted by a sibling origin (cookie
   * tossing) makes no token the attacker can compute.
   */
  readonly binding?: (request: FastifyRequest) => string | null
}

/** Name of the secret cookie: `__Host-` behind https (no sibling origin can set or shadow it). */
export function csrfCookieName(baseUrl: string): string {
  return new URL(baseUrl).protocol === 'https:' ? '__Host-envkeep_csrf' : 'envkeep_csrf'
}

const SECRET = /^[A-Za-z0-9_-]{43}$/

function csrfError(code: 'FST_CSRF_INVALID_TOKEN' | 'FST_CSRF_MISSING_SECRET', message: string): Error {
  return Object.assign(new Error(message), { code, statusCode: 403 })
}

/**
 * CSRF for the pages, in two independent checks on every state-changing form:
 *
 * 1. **Origin.** The browser says where the form came from: `Sec-Fetch-Site` must be
 *    `same-origin` (or `none`, typed by the person) and `Origin`, unless `null`, must be the
 *    base URL's origin. A page on another port or a sibling subdomain is "same-site" but not
 *    same-origin, and is refused. Requests with neither header (not from a current browser)
 *    fall to the token alone.
 * 2. **A token bound to the session.** `_csrf` = HMAC(secret cookie, binding), where the
 *    binding is the session (`binding(request)`, '' before sign-in). Planting a secret cookie
 *    is of no use without the victim's session, which is HttpOnly.
 *
 * Failures are 403 errors with the codes of @fastify/csrf-protection, which the pages' error
 * handlers already render.
 */
async function envkeepCsrf(app: FastifyInstance, o: CsrfOptions): Promise<void> {
  const origin = new URL(o.baseUrl).origin
  const secure = new URL(o.baseUrl).protocol === 'https:'
  const cookieName = csrfCookieName(o.baseUrl)
  const cookieOptions = { path: '/', httpOnly: true, sameSite: 'lax' as const, secure }
  const binding = o.binding ?? (() => null)

  function tokenFor(secret: string, request: FastifyRequest): string {
    return createHmac('sha256', secret)
      .update(`envkeep csrf v1\n${binding(request) ?? ''}`)
      .digest('base64url')
  }

  function secretOf(request: FastifyRequest): string | null {
    const v = request.cookies?.[cookieName]
    return typeof v === 'string' && SECRET.test(v) ? v : null
  }

  app.decorateReply('generateCsrf', function generateCsrf(this: FastifyReply): string {
    const request = this.request
    let secret = (request as { envkeepCsrfSecret?: string }).envkeepCsrfSecret ?? secretOf(request)
    if (!secret) {
      secret = randomBytes(32).toString('base64url')
      this.setCookie(cookieName, secret, cookieOptions)
    }
    ;(request as { envkeepCsrfSecret?: string }).envkeepCsrfSecret = secret
    return tokenFor(secret, request)
  })

  app.decorate('csrfProtection', function csrfProtection(request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction): void {
    // Sec-Fetch-Site first: pages are sent with `Referrer-Policy: no-referrer`, under which
    // a browser's form POST carries `Origin: null`, even from our own page.
    const fetchSite = request.headers['sec-fetch-site']
    if (fetchSite !== undefined && fetchSite !== 'same-origin' && fetchSite !== 'none') {
      done(csrfError('FST_CSRF_INVALID_TOKEN', 'the form came from another site'))
      return
    }
    const sentOrigin = request.headers.origin
    if (sentOrigin !== undefined && sentOrigin !== 'null' && sentOrigin !== origin) {
      done(csrfError('FST_CSRF_INVALID_TOKEN', 'the form came from another origin'))
      return
    }
    const secret = secretOf(request)
    if (!secret) {
      done(csrfError('FST_CSRF_MISSING_SECRET', 'no CSRF secret cookie'))
      return
    }
    const body = request.body as Record<string, unknown> | null | undefined
    const sent = body && typeof body === 'object' && typeof body._csrf === 'string' ? body._csrf : ''
    const expected = Buffer.from(tokenFor(secret, request))
    const got = Buffer.from(sent)
    if (got.length !== expected.length || !timingSafeEqual(got, expected)) {
      done(csrfError('FST_CSRF_INVALID_TOKEN', 'invalid CSRF token'))
      return
    }
    done()
  })
}

export const csrfPlugin = fp(envkeepCsrf, { name: '@envkeep/csrf', fastify: '5.x' })

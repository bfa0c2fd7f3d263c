import { createLocalJWKSet, decodeJwt, jwtVerify, type JSONWebKeySet, type JWTPayload } from 'jose'
import { fetchIssuerJson, IssuerFetchRefused } from './fetch-json.js'
import { discoveryUrl, issuerProblem } from './issuer-url.js'

/**
 * Signature algorithms a CI's identity token may use: asymmetric only. `none`
 * and the HMAC family are never accepted (an HS256 token "signed" with the
 * issuer's public key is the classic confusion attack).
 */
export const SUBJECT_TOKEN_ALGORITHMS = Object.freeze(['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'])

/** Seconds of clock skew allowed on `exp`, `nbf` and `iat`. */
export const SUBJECT_TOKEN_SKEW_SECONDS = 60

const DISCOVERY_TTL_MS = 10 * 60 * 1000

export interface SubjectTokenVerifierOptions {
  readonly now: () => Date
  /** `ENVKEEP_CI_ALLOW_HTTP_ISSUERS=loopback`: `http://127.0.0.1:*` issuers, for tests. */
  readonly allowHttpLoopback: boolean
  /** Milliseconds to wait for discovery and JWKS answers. Default 5000. */
  readonly fetchTimeoutMs?: number
}

/** Why a token was refused: for the log only, never for the caller (who sees `invalid_grant`). */
export class SubjectTokenRefused extends Error {
  constructor(reason: string, options?: { cause?: unknown }) {
    super(reason, options)
    this.name = 'SubjectTokenRefused'
  }
}

export interface SubjectTokenVerifier {
  /**
   * The unverified `iss` of a token, to pick the CI identities that trust it
   * before anything is fetched (only issuers some identity names are ever
   * contacted). Throws SubjectTokenRefused for a token that is not a JWT.
   */
  peekIssuer(token: string): string
  /**
   * Verifies signature (the issuer's JWKS, found through OIDC discovery,
   * cached, fetched again once for an unknown `kid`), `iss`, algorithm,
   * `exp`/`nbf`/`iat` within the allowed skew, and that `sub`, `aud`, `exp`
   * and `iat` are present. Audience and subject are matched by the caller
   * against each CI identity. Throws SubjectTokenRefused with the reason.
   */
  verify(token: string, issuer: string): Promise<JWTPayload & { sub: string; exp: number; iat: number }>
}

interface Discovered {
  readonly jwksUri: URL
  jwks: ReturnType<typeof createLocalJWKSet>
  /** when an unknown `kid` last made us fetch the JWKS again (ms since epoch) */
  lastForcedReload: number
}

/** An unknown `kid` fetches the JWKS again at most this often per issuer (a key rotated just now is found at once). */
const UNKNOWN_KID_RELOAD_MS = 10_000

/** A document of the issuer, through the SSRF rules and size bound of fetch-json.ts; refusals as SubjectTokenRefused. */
async function issuerDocument(what: string, url: URL, timeoutMs: number, allowLoopback: boolean): Promise<unknown> {
  try {
    return await fetchIssuerJson(url, { timeoutMs, allowLoopback })
  } catch (cause) {
    throw new SubjectTokenRefused(`${what}: ${cause instanceof IssuerFetchRefused ? cause.message : 'fetch failed'}`, { cause })
  }
}

/** The issuer's JWKS as a local key set (never jose's remote fetch: it reads any size from any address). */
async function loadJwks(url: URL, timeoutMs: number, allowLoopback: boolean): Promise<ReturnType<typeof createLocalJWKSet>> {
  const doc = await issuerDocument('JWKS', url, timeoutMs, allowLoopback)
  try {
    return createLocalJWKSet(doc as JSONWebKeySet)
  } catch (cause) {
    throw new SubjectTokenRefused('JWKS: not a key set', { cause })
  }
}

export function createSubjectTokenVerifier(options: SubjectTokenVerifierOptions): SubjectTokenVerifier {
  const timeoutMs = options.fetchTimeoutMs ?? 5000
  const discovered = new Map<string, Promise<Discovered>>()

  async function discover(issuer: string): Promise<Discovered> {
    const doc = (await issuerDocument('discovery', discoveryUrl(issuer), timeoutMs, options.allowHttpLoopback)) as Record<string, unknown> | null
    if (!doc || typeof doc !== 'object') throw new SubjectTokenRefused('discovery document is not an object')
    // OIDC Discovery §4.3: the issuer in the document must be exactly the one asked for.
    if (doc.issuer !== issuer) throw new SubjectTokenRefused('discovery document names another issuer')
    const jwksUri = doc.jwks_uri
    if (typeof jwksUri !== 'string') throw new SubjectTokenRefused('discovery document has no jwks_uri')
    const problem = issuerProblem(jwksUri, options.allowHttpLoopback)
    if (problem) throw new SubjectTokenRefused(`jwks_uri refused: ${problem.replace('the issuer', 'it')}`)
    const url = new URL(jwksUri)
    return { jwksUri: url, jwks: await loadJwks(url, timeoutMs, options.allowHttpLoopback), lastForcedReload: 0 }
  }

  function discovery(issuer: string): Promise<Discovered> {
    const hit = discovered.get(issuer)
    if (hit) return hit
    const p = discover(issuer)
    discovered.set(issuer, p)
    p.then(
      (d) => setTimeout(() => discovered.get(issuer) === p && discovered.delete(issuer), DISCOVERY_TTL_MS).unref(),
      () => discovered.delete(issuer),
    )
    return p
  }

  return {
    peekIssuer(token) {
      let iss: unknown
      try {
        iss = decodeJwt(token).iss
      } catch (cause) {
        throw new SubjectTokenRefused('the subject token is not a JWT', { cause })
      }
      if (typeof iss !== 'string') throw new SubjectTokenRefused('the subject token has no iss')
      return iss
    },

    async verify(token, issuer) {
      const problem = issuerProblem(issuer, options.allowHttpLoopback)
      if (problem) throw new SubjectTokenRefused(`issuer refused: ${problem}`)
      const d = await discovery(issuer)
      const now = options.now()
      const check = () =>
        jwtVerify(token, d.jwks, {
          issuer,
          algorithms: [...SUBJECT_TOKEN_ALGORITHMS],
          clockTolerance: SUBJECT_TOKEN_SKEW_SECONDS,
          currentDate: now,
          requiredClaims: ['sub', 'aud', 'exp', 'iat'],
        })
      let payload: JWTPayload
      try {
        try {
          ;({ payload } = await check())
        } catch (err) {
          if ((err as { code?: unknown }).code !== 'ERR_JWKS_NO_MATCHING_KEY') throw err
          if (Date.now() - d.lastForcedReload < UNKNOWN_KID_RELOAD_MS) throw err
          d.lastForcedReload = Date.now()
          d.jwks = await loadJwks(d.jwksUri, timeoutMs, options.allowHttpLoopback)
          ;({ payload } = await check())
        }
      } catch (cause) {
        const code = (cause as { code?: unknown }).code
        throw new SubjectTokenRefused(`verification failed (${typeof code === 'string' ? code : 'error'})`, { cause })
      }
      // jose checks iat only against a maximum age; a token issued in the future is refused here.
      const iat = payload.iat as number
      if (iat > now.getTime() / 1000 + SUBJECT_TOKEN_SKEW_SECONDS) throw new SubjectTokenRefused('iat is in the future')
      if (typeof payload.sub !== 'string' || payload.sub.length === 0) throw new SubjectTokenRefused('sub is empty')
      return payload as JWTPayload & { sub: string; exp: number; iat: number }
    },
  }
}

/** The audiences of a verified token, as a list. */
export function audiences(payload: JWTPayload): readonly string[] {
  const aud = payload.aud
  return typeof aud === 'string' ? [aud] : Array.isArray(aud) ? aud.filter((a): a is string => typeof a === 'string') : []
}

import { createHash } from 'node:crypto'
import { ciPrincipal, type CiIdentityRecord, type CiIdentityStore } from '../../adapters/ci-identity-store.js'
import type { ResolvedOptions } from '../../options.js'
import { oauthErrors, OAuthError } from '../oauth-errors.js'
import type { ParamValue } from '../params.js'
import { SCOPE_READ } from '../scopes.js'
import { newAccessToken } from '../tokens.js'
import { tokenHash } from '../../crypto/token-hash.js'
import { audiences, SubjectTokenRefused, SUBJECT_TOKEN_SKEW_SECONDS, type SubjectTokenVerifier } from '../workload/verify-subject-token.js'
import { subjectMatches } from '../workload/subject-pattern.js'

export const GRANT_TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange'
export const TOKEN_TYPE_JWT = 'urn:ietf:params:oauth:token-type:jwt'
export const TOKEN_TYPE_ID_TOKEN = 'urn:ietf:params:oauth:token-type:id_token'
export const TOKEN_TYPE_ACCESS_TOKEN = 'urn:ietf:params:oauth:token-type:access_token'

export interface TokenExchangeParams {
  readonly clientId: string
  readonly subjectToken: ParamValue
  readonly subjectTokenType: ParamValue
  readonly resource: ParamValue
  readonly scope: ParamValue
  readonly requestedTokenType: ParamValue
  readonly actorToken: ParamValue
  readonly audience: ParamValue
}

/** RFC 8693 §2.2.1: no refresh token, and the type of what was issued. */
export interface TokenExchangeResponse {
  readonly access_token: string
  readonly issued_token_type: typeof TOKEN_TYPE_ACCESS_TOKEN
  readonly token_type: 'Bearer'
  readonly expires_in: number
  readonly scope: string
  /** Which CI identity this run signed in as, for the client to say (RFC 6749 §5.1 extra member). */
  readonly envkeep_ci_identity: { readonly name: string; readonly vault_id: string }
}

/** The CI identities a verified token matches: audience, whole-subject pattern, required claims. */
export function matchingIdentities(identities: readonly CiIdentityRecord[], claims: Record<string, unknown>): CiIdentityRecord[] {
  const aud = audiences(claims)
  const sub = claims.sub as string
  return identities.filter(
    (i) => aud.includes(i.audience) && subjectMatches(i.subjectPattern, sub) && Object.entries(i.requiredClaims).every(([k, v]) => claims[k] === v),
  )
}

/** The claims of a CI run worth keeping in the access log: sub and run identifiers, printable, bounded. */
export function ciLabel(claims: Record<string, unknown>): string {
  const parts = [`sub=${String(claims.sub)}`]
  for (const k of ['run_id', 'run_attempt', 'pipeline_id', 'job_id']) {
    const v = claims[k]
    if (typeof v === 'string' || typeof v === 'number') parts.push(`${k}=${String(v)}`)
  }
  return parts
    .join(' ')
    .replace(/[^\x20-\x7e]/g, '?')
    .slice(0, 300)
}

/**
 * `grant_type=urn:ietf:params:oauth:grant-type:token-exchange` (RFC 8693):
 * a CI's identity token (a JWT from an OIDC issuer a vault's CI identity
 * trusts) for an `env:read` access token of the command-line client, at most
 * one hour and never past the JWT's own expiry, with no refresh token. Each
 * JWT is exchanged once. Every refusal of the token itself is `invalid_grant`
 * with one description; the reason goes to the log under the ref.
 */
export async function tokenExchangeGrant(
  p: TokenExchangeParams,
  opts: ResolvedOptions,
  store: Pick<CiIdentityStore, 'findCiIdentities' | 'issueCiSignIn'>,
  verifier: SubjectTokenVerifier,
): Promise<TokenExchangeResponse> {
  if (p.clientId !== opts.cliClientId) throw oauthErrors.invalidClient('this service knows only its own command-line client')
  if (typeof p.subjectToken !== 'string') throw oauthErrors.invalidRequest('subject_token is required')
  if (p.subjectTokenType !== TOKEN_TYPE_JWT && p.subjectTokenType !== TOKEN_TYPE_ID_TOKEN)
    throw oauthErrors.invalidRequest('subject_token_type must be urn:ietf:params:oauth:token-type:jwt')
  if (p.actorToken !== undefined) throw oauthErrors.invalidRequest('actor_token is not supported')
  if (p.audience !== undefined) throw oauthErrors.invalidTarget('name the API with resource, not audience')
  if (p.resource !== opts.resource) throw oauthErrors.invalidTarget('resource must be exactly the env API of this service')
  if (p.requestedTokenType !== undefined && p.requestedTokenType !== TOKEN_TYPE_ACCESS_TOKEN)
    throw oauthErrors.invalidRequest('requested_token_type must be an access token')
  if (p.scope !== undefined && p.scope !== SCOPE_READ) throw oauthErrors.invalidScope('a CI sign-in can only read (env:read)')

  const refused = (reason: string, cause?: unknown): OAuthError =>
    new OAuthError(400, 'invalid_grant', 'the subject token was refused or matches no CI identity', {
      cause: new SubjectTokenRefused(reason, cause === undefined ? undefined : { cause }),
      logDetail: reason,
    })

  const token = p.subjectToken
  let issuer: string
  try {
    issuer = verifier.peekIssuer(token)
  } catch (cause) {
    throw refused('not a JWT', cause)
  }
  // Only issuers some vault trusts are ever contacted.
  const trusting = await store.findCiIdentities({ issuer })
  if (trusting.length === 0) throw refused('no CI identity trusts this issuer')
  let claims: Awaited<ReturnType<SubjectTokenVerifier['verify']>>
  try {
    claims = await verifier.verify(token, issuer)
  } catch (cause) {
    throw refused(cause instanceof Error ? cause.message : 'verification failed', cause)
  }
  const matches = matchingIdentities(trusting, claims)
  if (matches.length === 0) throw refused('audience, subject or required claims match no CI identity')
  if (matches.length > 1) throw refused('more than one CI identity matches: give each a distinct audience')
  const identity = matches[0] as CiIdentityRecord

  const now = opts.now()
  const expiresAt = new Date(Math.min(now.getTime() + Math.min(opts.accessTokenTtlMs, 3_600_000), claims.exp * 1000))
  if (expiresAt.getTime() <= now.getTime()) throw refused('the subject token has expired')
  const access = newAccessToken()
  // One exchange per JWT: its issuer and jti, or the hash of the whole token when it has no jti.
  const key = createHash('sha256')
    .update(typeof claims.jti === 'string' ? `${issuer}\n${claims.jti}` : `${issuer}\n#${token}`)
    .digest('hex')
  const outcome = await store.issueCiSignIn({
    signIn: {
      id: crypto.randomUUID(),
      personId: ciPrincipal(identity.id),
      clientId: opts.cliClientId,
      resource: opts.resource,
      scopes: [SCOPE_READ],
      createdAt: now,
      expiresAt,
      label: `${identity.name}: ${ciLabel(claims)}`.slice(0, 400),
    },
    accessTokenHash: tokenHash(access),
    subjectTokenKey: key,
    subjectTokenExpiresAt: new Date((claims.exp + SUBJECT_TOKEN_SKEW_SECONDS) * 1000),
  })
  if (outcome === 'replayed') throw refused('this subject token was exchanged before')
  return {
    access_token: access,
    issued_token_type: TOKEN_TYPE_ACCESS_TOKEN,
    token_type: 'Bearer',
    expires_in: Math.max(1, Math.floor((expiresAt.getTime() - now.getTime()) / 1000)),
    scope: SCOPE_READ,
    envkeep_ci_identity: { name: identity.name, vault_id: identity.vaultId },
  }
}

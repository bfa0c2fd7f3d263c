import { createHash } from 'node:crypto'
import { ciPrincipal, type CiIdentityRecord } from '../../adapters/ci-identity-store.js'
import type { Domain } from '../../domain/index.js'
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
  /** envkeep's own, optional: the vault (id, or name) this run reads; picks among identities of several vaults */
  readonly vault: ParamValue
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
 * One exchange per identity token, however it is encoded: the key is the
 * verified claims (iss, sub, iat, exp) and a hash of the payload's decoded
 * bytes, never the token's text, which can change without changing what was
 * signed (spare bits of the last base64url character, whitespace, the high-S
 * twin of an ECDSA signature). Only called after the signature is verified.
 */
export function replayKey(issuer: string, claims: { sub: string; iat: number; exp: number }, token: string): string {
  const payload = Buffer.from(token.trim().split('.')[1] ?? '', 'base64url')
  const payloadHash = createHash('sha256').update(payload).digest('hex')
  return createHash('sha256')
    .update(JSON.stringify([issuer, claims.sub, claims.iat, claims.exp, payloadHash]))
    .digest('hex')
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
  domain: Pick<Domain, 'ciIdentitiesTrusting' | 'ciIdentitiesOfVault' | 'ciIdentityMaySignIn' | 'issueCiSignIn'>,
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
  if (p.vault !== undefined && (typeof p.vault !== 'string' || p.vault.length < 1 || p.vault.length > 200))
    throw oauthErrors.invalidRequest('vault must be a vault id or name of at most 200 characters')

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
  const trusting = await domain.ciIdentitiesTrusting(issuer)
  if (trusting.length === 0) throw refused('no CI identity trusts this issuer')
  let claims: Awaited<ReturnType<SubjectTokenVerifier['verify']>>
  try {
    claims = await verifier.verify(token, issuer)
  } catch (cause) {
    throw refused(cause instanceof Error ? cause.message : 'verification failed', cause)
  }
  let matches = matchingIdentities(trusting, claims)
  if (matches.length === 0) throw refused('audience, subject or required claims match no CI identity')
  // Identities never interfere across vaults: a run that names its vault gets that vault's identity only.
  if (typeof p.vault === 'string') {
    matches = await domain.ciIdentitiesOfVault(matches, p.vault)
    if (matches.length === 0) throw refused('no matching CI identity belongs to the vault the exchange names')
    if (new Set(matches.map((i) => i.vaultId)).size > 1) throw refused('matching CI identities belong to several vaults of that name: name the vault by its id')
    if (matches.length > 1) throw refused("more than one of this vault's CI identities matches: give each a distinct audience or subject pattern")
  } else if (matches.length > 1) {
    throw refused(
      new Set(matches.map((i) => i.vaultId)).size > 1
        ? 'CI identities of several vaults match and the exchange names no vault (the envkeep CLI names the vault it reads)'
        : "more than one of this vault's CI identities matches: give each a distinct audience or subject pattern",
    )
  }
  const identity = matches[0] as CiIdentityRecord
  if (!(await domain.ciIdentityMaySignIn(identity))) throw refused('the owner who added this CI identity is no longer an owner of its vault')

  const now = opts.now()
  const expiresAt = new Date(Math.min(now.getTime() + Math.min(opts.accessTokenTtlMs, 3_600_000), claims.exp * 1000))
  if (expiresAt.getTime() <= now.getTime()) throw refused('the subject token has expired')
  const access = newAccessToken()
  const key = replayKey(issuer, claims, token)
  const outcome = await domain.issueCiSignIn({
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
  if (!outcome.ok) throw refused('this subject token was exchanged before')
  return {
    access_token: access,
    issued_token_type: TOKEN_TYPE_ACCESS_TOKEN,
    token_type: 'Bearer',
    expires_in: Math.max(1, Math.floor((expiresAt.getTime() - now.getTime()) / 1000)),
    scope: SCOPE_READ,
    envkeep_ci_identity: { name: identity.name, vault_id: identity.vaultId },
  }
}

import type { ResolvedOptions } from '../../options.js'
import { oauthErrors } from '../oauth-errors.js'
import type { ParamValue } from '../params.js'
import { tokenHash } from '../../crypto/token-hash.js'
import { cliGrantTarget, mintTokens, personShown, type GrantTarget, type TokenResponse } from './issue.js'

export interface RefreshTokenParams {
  readonly clientId: string
  readonly refreshToken: ParamValue
  readonly resource: ParamValue
  readonly scope: ParamValue
}

/**
 * `grant_type=refresh_token`. Rotates on every use. Everything that can be
 * checked without using the token is checked first, so a refresh refused
 * for another reason (resource, scope, client, missing parameter) leaves the
 * token usable; only the store's atomic rotation consumes it, and a second
 * use there revokes the whole sign-in.
 */
export async function refreshTokenGrant(p: RefreshTokenParams, opts: ResolvedOptions, target: GrantTarget = cliGrantTarget(opts)): Promise<TokenResponse> {
  if (typeof p.refreshToken !== 'string') throw oauthErrors.invalidRequest('refresh_token is required')
  // RFC 6749 §5.2: a client this service does not know is invalid_client,
  // for a refresh exactly as for the code grant, before the token is looked at.
  if (!(await target.knowsClient(p.clientId))) throw oauthErrors.invalidClient(target.unknownClient)
  if (p.resource !== target.resource) throw oauthErrors.invalidTarget(target.wrongResource)
  const requested = target.parseScope(typeof p.scope === 'string' ? p.scope : undefined)
  if (requested === null) throw oauthErrors.invalidScope('the scope names a scope this service does not have')

  const refreshHash = tokenHash(p.refreshToken)
  const found = await opts.core.domain.findRefreshToken(refreshHash)
  const invalid = () => oauthErrors.invalidGrant('the refresh token is unknown, expired, revoked or was issued to another client')
  if (!found) throw invalid()
  const s = found.signIn
  // Another client presenting this token: refused, but not treated as reuse.
  if (s.clientId !== p.clientId) throw invalid()
  if (s.resource !== p.resource) throw oauthErrors.invalidTarget('resource must be the one the sign-in was made for')
  if (requested.some((x) => !s.scopes.includes(x))) throw oauthErrors.invalidScope('the scope is wider than the sign-in was granted')

  const now = opts.now()
  const lastUse = (s.lastUsedAt ?? s.createdAt).getTime()
  if (s.revokedAt !== null || now.getTime() >= s.expiresAt.getTime() || lastUse < now.getTime() - opts.signInIdleMs) {
    throw oauthErrors.invalidGrant('the sign-in has ended; sign in again')
  }
  const tokens = mintTokens(opts, now)
  const result = await opts.core.domain.rotateRefreshToken(refreshHash, tokens.hashes, now)
  if (!result.ok) {
    if (result.reason === 'reused') throw oauthErrors.invalidGrant('the refresh token was already used; the whole sign-in is revoked')
    throw invalid()
  }
  return tokens.respond(result.value.scopes, target.showsPerson ? await personShown(opts, result.value.personId) : undefined)
}

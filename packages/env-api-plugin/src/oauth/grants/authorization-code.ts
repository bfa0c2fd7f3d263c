import { randomUUID } from 'node:crypto'
import type { ResolvedOptions } from '../../options.js'
import { oauthErrors } from '../oauth-errors.js'
import type { ParamValue } from '../params.js'
import { isWellFormedVerifier, verifierMatches } from '../pkce.js'
import { tokenHash } from '../../crypto/token-hash.js'
import { cliGrantTarget, mintTokens, personShown, type GrantTarget, type TokenResponse } from './issue.js'

export interface AuthorizationCodeParams {
  readonly clientId: string
  readonly code: ParamValue
  readonly codeVerifier: ParamValue
  readonly redirectUri: ParamValue
  readonly resource: ParamValue
}

/**
 * `grant_type=authorization_code`. Every check that does not need the code's
 * secret comes first; a replay with a wrong verifier (or client, or redirect
 * URI) is refused without revoking anything (OAuth 2.1 §7.5.2); a replay
 * that is otherwise valid revokes what the code issued (§4.1.3).
 */
export async function authorizationCodeGrant(
  p: AuthorizationCodeParams,
  opts: ResolvedOptions,
  target: GrantTarget = cliGrantTarget(opts),
): Promise<TokenResponse> {
  if (!(await target.knowsClient(p.clientId))) throw oauthErrors.invalidClient(target.unknownClient)
  if (typeof p.code !== 'string') throw oauthErrors.invalidRequest('code is required')
  if (typeof p.codeVerifier !== 'string') throw oauthErrors.invalidRequest('code_verifier is required')
  if (!isWellFormedVerifier(p.codeVerifier)) throw oauthErrors.invalidRequest('code_verifier must be 43 to 128 unreserved characters')
  if (p.resource !== target.resource) throw oauthErrors.invalidTarget(target.wrongResource)

  const codeHash = tokenHash(p.code)
  const code = await opts.core.domain.findAuthorizationCode(codeHash)
  const invalid = () => oauthErrors.invalidGrant('the code is unknown, expired, already used or was issued for another request')
  if (!code) throw invalid()
  if (code.clientId !== p.clientId) throw invalid()
  if (p.redirectUri !== undefined && p.redirectUri !== code.redirectUri) throw invalid()
  if (!verifierMatches(p.codeVerifier, code.codeChallenge)) throw oauthErrors.invalidGrant('the code_verifier does not match the code challenge')
  if (code.resource !== p.resource) throw oauthErrors.invalidTarget('resource must be the one the code was issued for')

  const now = opts.now()
  if (code.consumedAt === null && now.getTime() >= code.expiresAt.getTime()) throw invalid()
  const tokens = mintTokens(opts, now)
  const result = await opts.core.domain.redeemAuthorizationCode(
    codeHash,
    {
      id: randomUUID(),
      personId: code.personId,
      clientId: code.clientId,
      resource: code.resource,
      scopes: code.scopes,
      createdAt: now,
      // 365 days from consent (when the code was issued), absolute
      expiresAt: new Date(code.createdAt.getTime() + opts.signInTtlMs),
    },
    tokens.hashes,
    now,
  )
  if (!result.ok) {
    if (result.reason === 'replayed') throw oauthErrors.invalidGrant('the code was already used; the sign-in it started is revoked')
    throw invalid()
  }
  return tokens.respond(result.value.scopes, target.showsPerson ? await personShown(opts, result.value.personId) : undefined)
}

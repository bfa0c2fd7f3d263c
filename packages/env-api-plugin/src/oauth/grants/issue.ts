import type { IssuedTokens } from '../../adapters/oauth-store.js'
import { tokenHash } from '../../crypto/token-hash.js'
import type { ResolvedOptions } from '../../options.js'
import { newAccessToken, newRefreshToken } from '../tokens.js'

/** A successful token response (OAuth 2.1 §3.2.3). */
export interface TokenResponse {
  readonly access_token: string
  readonly token_type: 'Bearer'
  readonly expires_in: number
  readonly refresh_token: string
  readonly scope: string
}

/** A fresh access/refresh pair: the values for the client, the hashes for storage. */
export function mintTokens(opts: ResolvedOptions, now: Date): { readonly hashes: IssuedTokens; respond(scopes: readonly string[]): TokenResponse } {
  const access = newAccessToken()
  const refresh = newRefreshToken()
  return {
    hashes: {
      accessTokenHash: tokenHash(access),
      accessExpiresAt: new Date(now.getTime() + opts.accessTokenTtlMs),
      refreshTokenHash: tokenHash(refresh),
    },
    respond: (scopes) => ({
      access_token: access,
      token_type: 'Bearer',
      expires_in: Math.round(opts.accessTokenTtlMs / 1000),
      refresh_token: refresh,
      scope: scopes.join(' '),
    }),
  }
}

import type { IssuedTokens } from '../../adapters/oauth-store.js'
import { tokenHash } from '../../crypto/token-hash.js'
import type { ResolvedOptions } from '../../options.js'
import { parseScope } from '../scopes.js'
import { newAccessToken, newRefreshToken } from '../tokens.js'

/**
 * Which client and resource a code or refresh grant is for: the CLI with
 * `{baseUrl}/api/env` (the default), or an MCP client with `{baseUrl}/mcp`.
 */
export interface GrantTarget {
  knowsClient(clientId: string): boolean | Promise<boolean>
  readonly unknownClient: string
  readonly resource: string
  readonly wrongResource: string
  parseScope(scope: string | undefined): string[] | null
}

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

/** The CLI's: its one client id and `{baseUrl}/api/env`. */
export function cliGrantTarget(opts: ResolvedOptions): GrantTarget {
  return {
    knowsClient: (id) => id === opts.cliClientId,
    unknownClient: 'this service knows only its own command-line client',
    resource: opts.resource,
    wrongResource: 'resource must be exactly the env API of this service',
    parseScope,
  }
}

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
  /** whether the token response names the person (`envkeep_person`): the CLI shows it; an MCP client is not told */
  readonly showsPerson: boolean
}

/** A successful token response (OAuth 2.1 §3.2.3). */
export interface TokenResponse {
  readonly access_token: string
  readonly token_type: 'Bearer'
  readonly expires_in: number
  readonly refresh_token: string
  readonly scope: string
  /**
   * Who signed in, for the client to display (RFC 6749 §5.1 allows extra members). Never an
   * identifier a client may act on; absent when the host no longer knows the person.
   */
  readonly envkeep_person?: PersonShown
}

/** The person of a sign-in as a client may show them. */
export interface PersonShown {
  readonly email: string
  readonly name: string
}

/** The person of a sign-in, for display by the client, or undefined. A lookup failure never fails the grant. */
export async function personShown(opts: ResolvedOptions, personId: string): Promise<PersonShown | undefined> {
  const p = await opts.people.getPerson(personId).catch(() => null)
  return p ? { email: p.email, name: p.name } : undefined
}

/** A fresh access/refresh pair: the values for the client, the hashes for storage. */
export function mintTokens(
  opts: ResolvedOptions,
  now: Date,
): { readonly hashes: IssuedTokens; respond(scopes: readonly string[], person?: PersonShown): TokenResponse } {
  const access = newAccessToken()
  const refresh = newRefreshToken()
  return {
    hashes: {
      accessTokenHash: tokenHash(access),
      accessExpiresAt: new Date(now.getTime() + opts.accessTokenTtlMs),
      refreshTokenHash: tokenHash(refresh),
    },
    respond: (scopes, person) => ({
      access_token: access,
      token_type: 'Bearer',
      expires_in: Math.round(opts.accessTokenTtlMs / 1000),
      refresh_token: refresh,
      scope: scopes.join(' '),
      ...(person ? { envkeep_person: person } : {}),
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
    showsPerson: true,
  }
}

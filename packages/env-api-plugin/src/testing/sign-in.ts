import { randomBytes, randomUUID } from 'node:crypto'
import type { OAuthStore } from '../adapters/oauth-store.js'
import { tokenHash } from '../crypto/token-hash.js'
import { newAccessToken, newRefreshToken } from '../oauth/tokens.js'

export interface MintSignInInput {
  /** the service's base URL: gives the CLI client id and the resource unless those are set */
  readonly baseUrl: string
  readonly personId: string
  /** default `['env:read', 'env:push']` */
  readonly scopes?: readonly string[]
  readonly now?: Date
  /** another client (an MCP client, say); default the CLI's `{baseUrl}/cli/oauth-client.json` */
  readonly clientId?: string
  /** another audience; default `{baseUrl}/api/env` */
  readonly resource?: string
  /** access token lifetime, default 1 hour */
  readonly tokenTtlMs?: number
  /** sign-in lifetime, default 365 days */
  readonly signInTtlMs?: number
}

export interface MintedSignIn {
  readonly signInId: string
  readonly accessToken: string
  readonly refreshToken: string
}

/**
 * A sign-in made straight in storage, the way the token endpoint makes one
 * (a consumed code, then the sign-in with hashed tokens), for tests and
 * benchmarks that need a bearer token without driving the browser flow.
 */
export async function mintSignIn(storage: OAuthStore, i: MintSignInInput): Promise<MintedSignIn> {
  const now = i.now ?? new Date()
  const clientId = i.clientId ?? `${i.baseUrl}/cli/oauth-client.json`
  const resource = i.resource ?? `${i.baseUrl}/api/env`
  const scopes = i.scopes ?? ['env:read', 'env:push']
  const accessToken = newAccessToken()
  const refreshToken = newRefreshToken()
  const codeHash = tokenHash(randomBytes(32).toString('base64url'))
  await storage.saveAuthorizationCode({
    codeHash,
    clientId,
    redirectUri: 'http://127.0.0.1:5000/callback',
    codeChallenge: randomBytes(32).toString('base64url'),
    resource,
    scopes,
    personId: i.personId,
    createdAt: now,
    expiresAt: new Date(now.getTime() + 60_000),
    consumedAt: null,
  })
  const r = await storage.exchangeAuthorizationCode(
    codeHash,
    {
      id: randomUUID(),
      personId: i.personId,
      clientId,
      resource,
      scopes,
      createdAt: now,
      expiresAt: new Date(now.getTime() + (i.signInTtlMs ?? 365 * 86_400_000)),
    },
    {
      accessTokenHash: tokenHash(accessToken),
      accessExpiresAt: new Date(now.getTime() + (i.tokenTtlMs ?? 3_600_000)),
      refreshTokenHash: tokenHash(refreshToken),
    },
    now,
  )
  if (!r.ok) throw new Error(`mintSignIn: the store answered ${r.reason}`)
  return { signInId: r.value.id, accessToken, refreshToken }
}

import { doneValue } from '../adapters/results.js'
import type { AuthorizationCodeRecord, IssuedTokens, SignInRecord } from '../adapters/oauth-store.js'
import type { DomainDeps } from './deps.js'

/**
 * Sign-ins by their secrets (issue 19: the OAuth grants, the revocation endpoint and the
 * bearer check go through the domain, not storage). Only hashes come here (crypto/token-hash.ts);
 * the OAuth protocol (which client, which redirect, PKCE, error wording) stays in oauth/.
 */

/**
 * Who holds this access token: its live sign-in, or null (unknown, expired, revoked, past the
 * sign-in's end, or idle longer than `idleMs`). Every API request asks this once: one indexed
 * read in storage (`findToken`), so a revocation is seen by the next request. A cache of
 * sign-ins by token hash belongs here, in front of that read.
 */
export async function signInOfToken(d: Pick<DomainDeps, 'storage' | 'now'>, hash: string, idleMs: number): Promise<SignInRecord | null> {
  const now = d.now()
  const grant = await d.storage.findToken(hash, 'access', now, new Date(now.getTime() - idleMs))
  if (!grant) return null
  const s = grant.signIn
  if (s.revokedAt !== null || now.getTime() >= s.expiresAt.getTime() || now.getTime() >= grant.tokenExpiresAt.getTime()) return null
  return s
}

/** Stores a new authorization code (its hash; consent was given). */
export async function saveAuthorizationCode(d: Pick<DomainDeps, 'storage'>, code: AuthorizationCodeRecord): Promise<void> {
  doneValue(await d.storage.saveAuthorizationCode(code))
}

/** A code by its hash, used or not; null when unknown. Reading never consumes. */
export function findAuthorizationCode(d: Pick<DomainDeps, 'storage'>, hash: string): Promise<AuthorizationCodeRecord | null> {
  return d.storage.findAuthorizationCode(hash)
}

/** Redeems a code once: the sign-in with its first tokens, or refused ('replayed' revokes what the code issued). */
export function redeemAuthorizationCode(
  d: Pick<DomainDeps, 'storage'>,
  hash: string,
  signIn: Omit<SignInRecord, 'lastUsedAt' | 'revokedAt'>,
  tokens: IssuedTokens,
  now: Date,
) {
  return d.storage.exchangeAuthorizationCode(hash, signIn, tokens, now)
}

/** A refresh token by its hash with its sign-in, as stored (used or not); null when unknown. */
export function findRefreshToken(d: Pick<DomainDeps, 'storage' | 'now'>, hash: string) {
  const now = d.now()
  return d.storage.findToken(hash, 'refresh', now, now)
}

/** Rotates a refresh token once: the sign-in, or refused ('reused' revokes the whole sign-in). */
export function rotateRefreshToken(d: Pick<DomainDeps, 'storage'>, hash: string, tokens: IssuedTokens, now: Date) {
  return d.storage.rotateRefreshToken(hash, tokens, now)
}

/** RFC 7009: ends the sign-in an access or refresh token belongs to, when it is `clientId`'s; whether one ended. */
export async function revokeByToken(d: Pick<DomainDeps, 'storage' | 'now'>, hash: string, clientId: string): Promise<boolean> {
  return doneValue(await d.storage.revokeSignIns({ tokenHash: hash, clientId }, d.now())) > 0
}

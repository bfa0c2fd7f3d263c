/**
 * The OAuth half of the storage contract: authorization codes, sign-ins
 * (grants) and token hashes. Only SHA-256 hashes of codes and tokens are
 * ever given to storage (as lowercase hex strings). Same rules as
 * vault-store.ts: async, absent → null, what must be atomic is one method.
 *
 * The OAuth work (issue 3) owns this file and may extend it.
 */

import type { ChangeResult } from './results.js'

export interface SignInRecord {
  readonly id: string
  readonly personId: string
  readonly clientId: string
  readonly resource: string
  readonly scopes: readonly string[]
  readonly createdAt: Date
  /** absolute end of the sign-in (created + 365 days); refresh never extends it */
  readonly expiresAt: Date
  readonly lastUsedAt: Date | null
  readonly revokedAt: Date | null
  /**
   * For a CI sign-in (`personId` `ci:<identity id>`): the identity's name and
   * the identity token's `sub` and run claims, written into the access log
   * with every read. Absent or null for a person's sign-in.
   */
  readonly label?: string | null
}

/** What a live access token resolves to at the API. */
export interface AccessGrant {
  readonly signIn: SignInRecord
  readonly tokenExpiresAt: Date
}

export interface AuthorizationCodeRecord {
  readonly codeHash: string
  readonly clientId: string
  readonly redirectUri: string
  readonly codeChallenge: string
  readonly resource: string
  readonly scopes: readonly string[]
  readonly personId: string
  readonly createdAt: Date
  readonly expiresAt: Date
  /** set once redeemed */
  readonly consumedAt: Date | null
}

/** Tokens issued together (at code exchange or refresh), as hashes. */
export interface IssuedTokens {
  readonly accessTokenHash: string
  readonly accessExpiresAt: Date
  readonly refreshTokenHash: string
}

/** The records a token's hash finds (`findToken`), by kind of token. */
export interface FoundToken {
  /** an access token's live grant */
  readonly access: AccessGrant
  /** a refresh token with its sign-in, as stored (used or not, its sign-in live or not) */
  readonly refresh: RefreshTokenRecord
}

/** Which live sign-ins `revokeSignIns` ends. */
export type SignInFilter =
  /** a person's: one (`signInId`; none when absent, already revoked or not theirs) or all of them */
  | { readonly personId: string; readonly signInId?: string }
  /** the one an access or refresh token (by hash) belongs to, if that sign-in is `clientId`'s (RFC 7009) */
  | { readonly tokenHash: string; readonly clientId: string }

export interface RefreshTokenRecord {
  readonly tokenHash: string
  readonly signIn: SignInRecord
  readonly usedAt: Date | null
}

export interface OAuthStore {
  /** Stores a new authorization code (by hash). Never refused. */
  saveAuthorizationCode(code: AuthorizationCodeRecord): Promise<ChangeResult<never>>

  /** A code by hash (used or not), or null. Reading never consumes. */
  findAuthorizationCode(codeHash: string): Promise<AuthorizationCodeRecord | null>

  /**
   * Atomically: if the code is unconsumed, mark it consumed and create the
   * sign-in (`signIn`) with `tokens`, answering it. If it was already
   * consumed, revoke the sign-in created from it → 'replayed'. Unknown →
   * 'unknown'. Under concurrency exactly one caller succeeds.
   */
  exchangeAuthorizationCode(
    codeHash: string,
    signIn: Omit<SignInRecord, 'lastUsedAt' | 'revokedAt'>,
    tokens: IssuedTokens,
    now: Date,
  ): Promise<ChangeResult<'replayed' | 'unknown', SignInRecord>>

  /**
   * A token by its hash, or null. `access`: its live grant, or null when unknown, expired,
   * its sign-in revoked, past its absolute end, or idle since before `idleCutoff`; records
   * last use (at most once a minute). Every API request asks this: one indexed read. `refresh`:
   * the token and its sign-in as stored (used or not; `now` and `idleCutoff` unused); reading
   * never consumes.
   */
  findToken<K extends keyof FoundToken>(tokenHash: string, kind: K, now: Date, idleCutoff: Date): Promise<FoundToken[K] | null>

  /**
   * Atomically: an unused refresh token of a live sign-in (not revoked,
   * `now < expiresAt`) is marked used and `tokens` are added to its sign-in,
   * answering the sign-in. A used one revokes the whole sign-in → 'reused';
   * unknown, or its sign-in revoked or ended → 'unknown'. Under concurrency
   * exactly one caller succeeds.
   */
  rotateRefreshToken(oldHash: string, tokens: IssuedTokens, now: Date): Promise<ChangeResult<'reused' | 'unknown', SignInRecord>>

  /** Sign-ins of one person, newest first (for the "Sign-ins" page), revoked ones included. */
  listSignIns(personId: string): Promise<SignInRecord[]>

  /** Revokes the live sign-ins the filter selects. Never refused; its value: how many (0 when none). */
  revokeSignIns(filter: SignInFilter, now: Date): Promise<ChangeResult<never, number>>
}

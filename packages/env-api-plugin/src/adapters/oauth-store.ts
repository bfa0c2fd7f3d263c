/**
 * The OAuth half of the storage contract: authorization codes, sign-ins
 * (grants) and token hashes. Only SHA-256 hashes of codes and tokens are
 * ever given to storage (as lowercase hex strings). Same rules as
 * vault-store.ts: async, absent → null, what must be atomic is one method.
 *
 * The OAuth work (issue 3) owns this file and may extend it.
 */

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

export type ExchangeCodeResult =
  /** the code was unused: it is now consumed, the sign-in and its tokens exist */
  | { readonly outcome: 'issued'; readonly signIn: SignInRecord }
  /** the code had been redeemed before: the sign-in it created is now revoked */
  | { readonly outcome: 'replayed' }
  | { readonly outcome: 'unknown' }

export type RotateRefreshResult =
  | { readonly outcome: 'rotated'; readonly signIn: SignInRecord }
  /** the token had been used before: the whole sign-in is now revoked */
  | { readonly outcome: 'reused' }
  /** unknown, or its sign-in is revoked or expired */
  | { readonly outcome: 'unknown' }

export interface RefreshTokenRecord {
  readonly tokenHash: string
  readonly signIn: SignInRecord
  readonly usedAt: Date | null
}

export interface OAuthStore {
  saveAuthorizationCode(code: AuthorizationCodeRecord): Promise<void>

  /** A code by hash (used or not), or null. Reading never consumes. */
  findAuthorizationCode(codeHash: string): Promise<AuthorizationCodeRecord | null>

  /**
   * Atomically: if the code is unconsumed, mark it consumed and create the
   * sign-in (`signIn`) with `tokens` → 'issued'. If it was already consumed,
   * revoke the sign-in created from it → 'replayed'. Unknown → 'unknown'.
   * Under concurrency exactly one caller gets 'issued'.
   */
  exchangeAuthorizationCode(
    codeHash: string,
    signIn: Omit<SignInRecord, 'lastUsedAt' | 'revokedAt'>,
    tokens: IssuedTokens,
    now: Date,
  ): Promise<ExchangeCodeResult>

  /** A refresh token by hash with its sign-in (used or not), or null. Reading never consumes. */
  findRefreshToken(tokenHash: string): Promise<RefreshTokenRecord | null>

  /**
   * Atomically: an unused refresh token of a live sign-in (not revoked,
   * `now < expiresAt`) is marked used and `tokens` are added to its sign-in
   * → 'rotated'. A used one revokes the whole sign-in → 'reused'.
   * Under concurrency exactly one caller gets 'rotated'.
   */
  rotateRefreshToken(oldHash: string, tokens: IssuedTokens, now: Date): Promise<RotateRefreshResult>

  /**
   * Revokes the sign-in that an access or refresh token (by hash) belongs
   * to, if that sign-in belongs to `clientId`. Returns true if something was revoked.
   */
  revokeByToken(tokenHash: string, clientId: string, now: Date): Promise<boolean>

  /**
   * Resolves an access token hash to its live grant, or null (unknown,
   * expired, sign-in revoked, past its absolute end, or idle since before
   * `idleCutoff`). May record last use (at most once a minute).
   */
  findAccessToken(tokenHash: string, now: Date, idleCutoff: Date): Promise<AccessGrant | null>

  /** Sign-ins of one person, newest first (for the "Sign-ins" page), revoked ones included. */
  listSignIns(personId: string): Promise<SignInRecord[]>

  /**
   * Revokes the live sign-ins of a person: one (`signInId`; 0 if absent,
   * already revoked or not theirs) or all of them (admin). Returns how many.
   */
  revokeSignIns(input: { readonly personId: string; readonly signInId?: string }, now: Date): Promise<number>

  /**
   * Optional housekeeping: deletes what can no longer be used or needed,
   * and returns how many rows went. Codes expired before `codesBefore`,
   * access tokens expired before `now`, and sign-ins (with all their tokens)
   * that ended (revoked or past their absolute end) before `signInsBefore`.
   * Used refresh tokens of live sign-ins stay: reuse detection needs them.
   */
  purgeExpired?(now: Date, codesBefore: Date, signInsBefore: Date): Promise<number>
}

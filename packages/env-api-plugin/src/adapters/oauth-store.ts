/**
 * The OAuth half of the storage contract: authorization codes, sign-ins
 * (grants) and token hashes. Only SHA-256 hashes of codes and tokens are
 * ever given to storage. Same rules as vault-store.ts: async, absent → null,
 * atomic things are one method.
 *
 * Owned by the OAuth work (issue 3); it may reshape this file.
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
}

/** What an access token resolves to at the API. */
export interface AccessGrant {
  readonly signIn: SignInRecord
  readonly tokenExpiresAt: Date
}

export interface OAuthStore {
  // The OAuth work defines the methods: save/consume code (atomic),
  // issue tokens, rotate refresh (atomic: 'rotated' | 'reused' | 'unknown'),
  // revoke, find access token, list/revoke sign-ins of a person.
  /** Resolves an access token hash to its live grant, or null (unknown, expired, revoked). */
  findAccessToken(tokenHash: Uint8Array, now: Date): Promise<AccessGrant | null>
  /** Sign-ins of one person, newest first (for the "Sign-ins" page). */
  listSignIns(personId: string): Promise<SignInRecord[]>
  /** Revokes one sign-in of a person; false if absent or not theirs. */
  revokeSignIn(signInId: string, personId: string, now: Date): Promise<boolean>
}

import type { ChangeResult } from './results.js'
import type { AccessLogEntry } from './vault-store.js'

/**
 * CI identities ("machine members"): a vault trusts the identity tokens of a
 * CI issuer (GitHub Actions, GitLab, any OIDC issuer) whose audience, subject
 * and required claims match. A CI identity belongs to one vault and reads it
 * with its role (editor or owner), optionally limited to some environments.
 * It is not a member (it never counts as an owner), never pushes (its
 * sign-ins carry `env:read` only), never decides a push, never uses the
 * pages. Its sign-ins have `personId` `ci:<identity id>`. Same rules as
 * vault-store.ts.
 */

export interface CiIdentityRecord {
  readonly id: string
  readonly vaultId: string
  /** shown in the access log and on the "CI access" page */
  readonly name: string
  /** exact `iss`, https (or http://127.0.0.1 in tests) */
  readonly issuer: string
  /** the `aud` the token must carry */
  readonly audience: string
  /** matched against the whole `sub`; `*` stands for any run of characters */
  readonly subjectPattern: string
  /** claims that must be present with exactly these string values (e.g. `ref`, `environment`) */
  readonly requiredClaims: Readonly<Record<string, string>>
  readonly role: 'editor' | 'owner'
  /** the environments it is limited to, or null for every environment its role reads */
  readonly environments: readonly string[] | null
  readonly createdAt: Date
}

export interface NewCiIdentity {
  readonly id: string
  readonly vaultId: string
  readonly name: string
  readonly issuer: string
  readonly audience: string
  readonly subjectPattern: string
  readonly requiredClaims: Readonly<Record<string, string>>
  readonly role: 'editor' | 'owner'
  readonly environments: readonly string[] | null
  readonly now: Date
}

/** A change of a vault's CI identities (`changeCiIdentity`). */
export type CiIdentityChange =
  /** adds one; 'name_taken' when the vault has one of that name (names compare case-insensitively), 'not_found' when the vault is gone */
  | { readonly kind: 'create'; readonly identity: NewCiIdentity }
  /** removes one of the vault and revokes every sign-in it holds; 'not_found' when the vault has no such identity */
  | { readonly kind: 'remove'; readonly vaultId: string; readonly id: string; readonly now: Date }

/** A sign-in made by exchanging a CI's identity token (no refresh token, one access token). */
export interface NewCiSignIn {
  readonly signIn: {
    readonly id: string
    /** `ci:<identity id>` */
    readonly personId: string
    readonly clientId: string
    readonly resource: string
    readonly scopes: readonly string[]
    readonly createdAt: Date
    /** the access token's end: at most an hour, never past the identity token's `exp` */
    readonly expiresAt: Date
    /** the identity's name and the token's `sub` and run claims, for the access log */
    readonly label: string
  }
  readonly accessTokenHash: string
  /** SHA-256 (hex) of the identity token's verified iss, sub, iat, exp and decoded payload (never of its text) */
  readonly subjectTokenKey: string
  /** when the key may be forgotten (the identity token's `exp` plus the skew) */
  readonly subjectTokenExpiresAt: Date
}

export interface CiIdentityStore {
  /**
   * Applies `change` and appends `log` (`member_added` with `subject` `ci:<id>` and the role
   * as `detail`; `member_removed` with `subject` `ci:<id>`), in one transaction. Answers the
   * identity as created or as it was; a removal also revokes every sign-in the identity holds
   * (`personId` = `ci:<id>`: its live tokens stop at once). Refused, with nothing written or
   * logged, for the reasons each kind gives.
   */
  changeCiIdentity(change: CiIdentityChange, log: AccessLogEntry): Promise<ChangeResult<'name_taken' | 'not_found', CiIdentityRecord>>

  /**
   * The CI identities of one vault (`vaultId`), trusting exactly one issuer
   * (`issuer`), or the one with an id (`id`), in name order (then id); `[]`
   * when none.
   */
  findCiIdentities(filter: { readonly vaultId: string } | { readonly issuer: string } | { readonly id: string }): Promise<CiIdentityRecord[]>

  /**
   * Atomically: records `subjectTokenKey` as used and creates the sign-in
   * with its one access token (no refresh token). A key used before →
   * 'replayed', nothing created. Under concurrency exactly one caller
   * succeeds. Housekeeping may forget keys past their expiry.
   */
  issueCiSignIn(input: NewCiSignIn): Promise<ChangeResult<'replayed'>>
}

/** The sign-in `personId` of a CI identity (never a person's id: those are not `ci:`-prefixed). */
export function ciPrincipal(identityId: string): string {
  return `ci:${identityId}`
}

/** The CI identity id behind a sign-in's `personId`, or null for a person. */
export function ciIdentityIdOf(principal: string): string | null {
  return principal.startsWith('ci:') ? principal.slice(3) : null
}

/**
 * CI identities ("machine members"): a vault trusts the identity tokens of a
 * CI issuer (GitHub Actions, GitLab, any OIDC issuer) whose audience, subject
 * and required claims match. A CI identity is a member of its vault with the
 * member id `ci:<identity id>`, so the vault list and role checks treat it like
 * a person; it never pushes (its sign-ins carry `env:read` only), decides a
 * push or uses the pages. Same rules as vault-store.ts.
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

/** The member id a CI identity holds in its vault (and the `personId` of its sign-ins). */
export function ciMemberId(identityId: string): string {
  return `ci:${identityId}`
}

/** The CI identity id behind a member id, or null for a person. */
export function ciIdentityIdOf(memberId: string): string | null {
  return memberId.startsWith('ci:') ? memberId.slice(3) : null
}

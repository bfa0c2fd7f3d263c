import { sql, type Kysely } from 'kysely'

/** A sign-in under way at the identity provider (what the callback checks). */
export interface OidcState {
  readonly verifier: string
  readonly nonce: string
  readonly returnTo: string
  /** set when a signed-in person links their account from the Account page */
  readonly linkAccountId: string | null
}

/**
 * Single sign-on's part of the account store (issue 22), portable SQL like factor-store.ts:
 * links `(issuer, subject)` → account (one per issuer per account, never moved), the
 * memberships group rules made, OIDC states and break-glass links (hashes only, one use).
 */
export interface IdentityStore {
  /** The account linked to this identity, or null. */
  findIdentity(issuer: string, subject: string): Promise<string | null>
  /** The subject an account is linked to at this issuer, or null. */
  identityOf(accountId: string, issuer: string): Promise<string | null>
  /** Links; false when the identity or the account (at this issuer) is linked already (nothing changes). */
  linkIdentity(issuer: string, subject: string, accountId: string, now: Date): Promise<boolean>
  countIdentities(): Promise<number>

  listRuleMemberships(accountId: string): Promise<{ vaultId: string; group: string; role: string }[]>
  setRuleMembership(vaultId: string, accountId: string, group: string, role: string): Promise<void>
  deleteRuleMembership(vaultId: string, accountId: string): Promise<void>

  createOidcState(stateHash: string, s: OidcState, now: Date, expiresAt: Date): Promise<void>
  /** Consumes the live state; null when unknown, used or expired (a replayed callback). */
  takeOidcState(stateHash: string, now: Date): Promise<OidcState | null>

  createLoginLink(tokenHash: string, accountId: string, now: Date, expiresAt: Date): Promise<void>
  /** The live link's account (never consumes), or null. */
  findLoginLink(tokenHash: string, now: Date): Promise<string | null>
  /** Consumes the live link; its account, or null. */
  takeLoginLink(tokenHash: string, now: Date): Promise<string | null>
}

export function sqlIdentityStore(db: Kysely<unknown>, guard: <T>(detail: string, work: () => Promise<T>) => Promise<T>): IdentityStore {
  const rows = async <T>(q: ReturnType<typeof sql>): Promise<T[]> => (await q.execute(db)).rows as T[]
  return {
    findIdentity: (issuer, subject) =>
      guard('account_identities', async () => {
        const [r] = await rows<{ account_id: string }>(sql`select account_id from account_identities where issuer = ${issuer} and subject = ${subject}`)
        return r?.account_id ?? null
      }),
    identityOf: (accountId, issuer) =>
      guard('account_identities', async () => {
        const [r] = await rows<{ subject: string }>(sql`select subject from account_identities where account_id = ${accountId} and issuer = ${issuer}`)
        return r?.subject ?? null
      }),
    linkIdentity: (issuer, subject, accountId, now) =>
      guard('account_identities', async () => {
        const r =
          await sql`insert into account_identities (issuer, subject, account_id, created_at) values (${issuer}, ${subject}, ${accountId}, ${now.getTime()})
          on conflict do nothing`.execute(db)
        return Number(r.numAffectedRows ?? 0) > 0
      }),
    countIdentities: () =>
      guard('account_identities', async () => Number((await rows<{ n: number | string }>(sql`select count(*) as n from account_identities`))[0]!.n)),

    listRuleMemberships: (accountId) =>
      guard('rule_memberships', async () =>
        (
          await rows<{ vault_id: string; grp: string; role: string }>(sql`select vault_id, grp, role from rule_memberships where account_id = ${accountId}`)
        ).map((r) => ({
          vaultId: r.vault_id,
          group: r.grp,
          role: r.role,
        })),
      ),
    setRuleMembership: (vaultId, accountId, group, role) =>
      guard('rule_memberships', async () => {
        await sql`insert into rule_memberships (vault_id, account_id, grp, role) values (${vaultId}, ${accountId}, ${group}, ${role})
          on conflict (vault_id, account_id) do update set grp = excluded.grp, role = excluded.role`.execute(db)
      }),
    deleteRuleMembership: (vaultId, accountId) =>
      guard('rule_memberships', async () => {
        await sql`delete from rule_memberships where vault_id = ${vaultId} and account_id = ${accountId}`.execute(db)
      }),

    createOidcState: (stateHash, s, now, expiresAt) =>
      guard('oidc_states', async () => {
        await sql`delete from oidc_states where expires_at <= ${now.getTime()}`.execute(db)
        await sql`insert into oidc_states (state_hash, verifier, nonce, return_to, link_account_id, created_at, expires_at)
          values (${stateHash}, ${s.verifier}, ${s.nonce}, ${s.returnTo}, ${s.linkAccountId}, ${now.getTime()}, ${expiresAt.getTime()})`.execute(db)
      }),
    takeOidcState: (stateHash, now) =>
      guard('oidc_states', async () => {
        const [r] = await rows<{ verifier: string; nonce: string; return_to: string; link_account_id: string | null; expires_at: number | string }>(
          sql`delete from oidc_states where state_hash = ${stateHash} returning verifier, nonce, return_to, link_account_id, expires_at`,
        )
        if (!r || Number(r.expires_at) <= now.getTime()) return null
        return { verifier: r.verifier, nonce: r.nonce, returnTo: r.return_to, linkAccountId: r.link_account_id }
      }),

    createLoginLink: (tokenHash, accountId, now, expiresAt) =>
      guard('login_links', async () => {
        await sql`delete from login_links where expires_at <= ${now.getTime()}`.execute(db)
        await sql`insert into login_links (token_hash, account_id, created_at, expires_at) values (${tokenHash}, ${accountId}, ${now.getTime()}, ${expiresAt.getTime()})`.execute(
          db,
        )
      }),
    findLoginLink: (tokenHash, now) =>
      guard('login_links', async () => {
        const [r] = await rows<{ account_id: string }>(
          sql`select account_id from login_links where token_hash = ${tokenHash} and expires_at > ${now.getTime()}`,
        )
        return r?.account_id ?? null
      }),
    takeLoginLink: (tokenHash, now) =>
      guard('login_links', async () => {
        const [r] = await rows<{ account_id: string; expires_at: number | string }>(
          sql`delete from login_links where token_hash = ${tokenHash} returning account_id, expires_at`,
        )
        return r && Number(r.expires_at) > now.getTime() ? r.account_id : null
      }),
  }
}

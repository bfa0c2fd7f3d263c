import { sql, type Kysely } from 'kysely'
import type { Migration } from 'kysely/migration'

/**
 * CI identities (sign-in by workload identity): the identities a vault
 * trusts, the identity tokens already exchanged (each JWT once), and a label
 * on sign-ins (the identity and the token's subject and run, for the access log).
 */
export const m005CiIdentities: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await sql`create table ci_identities (
      id text primary key,
      vault_id text not null references vaults (id) on delete cascade,
      name text not null,
      issuer text not null,
      audience text not null,
      subject_pattern text not null,
      required_claims text not null default '{}',
      role text not null,
      environments text,
      created_at integer not null,
      constraint ci_identities_role check (role in ('editor', 'owner')),
      constraint ci_identities_claims check (json_valid(required_claims) and json_type(required_claims) = 'object'),
      constraint ci_identities_environments check (environments is null or (json_valid(environments) and json_type(environments) = 'array'))
    )`.execute(db)
    await sql`create unique index ci_identities_name on ci_identities (vault_id, name collate nocase)`.execute(db)
    await sql`create index ci_identities_by_issuer on ci_identities (issuer)`.execute(db)
    await sql`create table used_subject_tokens (
      key text primary key,
      expires_at integer not null
    ) without rowid`.execute(db)
    await sql`alter table sign_ins add column label text`.execute(db)
  },
}

import { sql, type Kysely } from 'kysely'
import { Migrator, type Migration } from 'kysely/migration'
import { MIGRATION_LOCK_TABLE, MIGRATION_TABLE } from './sqlite.js'

/** The server's own tables on PostgreSQL: accounts (email unique case-insensitively), web sessions, setup tokens. */
const m001Accounts: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await sql`
      create table accounts (
        id text primary key,
        email text not null,
        name text not null,
        password_hash text not null,
        created_at bigint not null
      );
      create unique index accounts_email_unique on accounts (lower(email));
      create table web_sessions (
        token_hash text primary key,
        account_id text not null references accounts (id) on delete cascade,
        created_at bigint not null,
        expires_at bigint not null
      );
      create index web_sessions_account on web_sessions (account_id);
      create table setup_tokens (
        token_hash text primary key,
        created_at bigint not null,
        expires_at bigint not null
      );
    `.execute(db)
  },
}

/** Invitations to a vault for people without an account (see sqlite.ts). */
const m002Invitations: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await sql`
      create table invitations (
        id text primary key,
        token_hash text not null unique,
        vault_id text not null,
        email text not null,
        role text not null check (role in ('owner', 'editor', 'viewer')),
        invited_by text not null references accounts (id) on delete cascade,
        created_at bigint not null,
        expires_at bigint not null
      );
      create index invitations_vault on invitations (vault_id, expires_at);
      create index invitations_email on invitations (vault_id, lower(email));
    `.execute(db)
  },
}

/** Whether an email was proven, and whether an invitation proves it (see sqlite.ts, m003). */
const m003EmailProof: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await sql`
      alter table accounts add column email_confirmed boolean not null default true;
      alter table invitations add column proves_email boolean not null default false;
      create index invitations_by_email on invitations (lower(email), expires_at);
    `.execute(db)
  },
}

/** Second factors, recovery codes, pending sign-ins, sign-in events, session details (see sqlite.ts, m004). */
const m004Factors: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await sql`
      create table account_factors (
        id text primary key,
        account_id text not null references accounts (id) on delete cascade,
        kind text not null check (kind in ('totp', 'passkey')),
        name text not null,
        sealed_secret text,
        credential_id text unique,
        public_key text,
        counter bigint not null default 0,
        transports text,
        last_step bigint not null default 0,
        created_at bigint not null,
        last_used_at bigint
      );
      create index account_factors_account on account_factors (account_id);
      create table recovery_codes (
        account_id text not null references accounts (id) on delete cascade,
        code_hash text not null,
        primary key (account_id, code_hash)
      );
      create table pending_signins (
        token_hash text primary key,
        account_id text not null references accounts (id) on delete cascade,
        return_to text not null,
        created_at bigint not null,
        expires_at bigint not null
      );
      create table signin_events (
        id text primary key,
        at bigint not null,
        account_id text,
        event text not null,
        detail text,
        address text
      );
      create index signin_events_at on signin_events (at);
      alter table web_sessions add column user_agent text;
      alter table web_sessions add column address text;
      alter table web_sessions add column last_used_at bigint;
    `.execute(db)
  },
}

/** Identities, rule-made memberships, OIDC states, break-glass links (see sqlite.ts, m005). */
const m005Sso: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await sql`
      create table account_identities (
        issuer text not null,
        subject text not null,
        account_id text not null references accounts (id) on delete cascade,
        created_at bigint not null,
        primary key (issuer, subject),
        unique (account_id, issuer)
      );
      create table rule_memberships (
        vault_id text not null,
        account_id text not null references accounts (id) on delete cascade,
        grp text not null,
        role text not null,
        primary key (vault_id, account_id)
      );
      create table oidc_states (
        state_hash text primary key,
        verifier text not null,
        nonce text not null,
        return_to text not null,
        link_account_id text,
        created_at bigint not null,
        expires_at bigint not null
      );
      create table login_links (
        token_hash text primary key,
        account_id text not null references accounts (id) on delete cascade,
        created_at bigint not null,
        expires_at bigint not null
      );
    `.execute(db)
  },
}

/** WebAuthn challenges (see sqlite.ts, m006). */
const m006WebauthnChallenges: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await sql`
      create table webauthn_challenges (
        challenge text primary key,
        purpose text not null,
        account_id text,
        created_at bigint not null,
        expires_at bigint not null
      );
    `.execute(db)
  },
}

export async function migrateAccountsPostgres(db: Kysely<unknown>, schema?: string): Promise<void> {
  const migrator = new Migrator({
    db,
    provider: {
      getMigrations: async () => ({
        '001_accounts': m001Accounts,
        '002_invitations': m002Invitations,
        '003_email_proof': m003EmailProof,
        '004_factors': m004Factors,
        '005_sso': m005Sso,
        '006_webauthn_challenges': m006WebauthnChallenges,
      }),
    },
    migrationTableName: MIGRATION_TABLE,
    migrationLockTableName: MIGRATION_LOCK_TABLE,
    ...(schema ? { migrationTableSchema: schema } : {}),
  })
  const { error } = await migrator.migrateToLatest()
  if (error) throw new Error('envkeep-server: migration of the accounts tables failed', { cause: error })
}

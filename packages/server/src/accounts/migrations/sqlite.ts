import { sql, type Kysely } from 'kysely'
import { Migrator, type Migration } from 'kysely/migration'

/**
 * The server's own tables on SQLite: local accounts, web sessions and the
 * one-time setup token. Secrets only as hashes (argon2id for passwords,
 * SHA-256 hex for tokens); times in epoch milliseconds.
 *
 * They live in the data directory's database beside the storage's tables
 * but are migrated here, under the server's own migration table. Data
 * directories made before the move already hold them (made by the storage
 * package's migration 003_accounts): `if not exists` adopts them as they are.
 * Migrations never import app code.
 */
const m001Accounts: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await sql`create table if not exists accounts (
      id text primary key,
      email text not null collate nocase,
      name text not null,
      password_hash text not null,
      created_at integer not null
    ) strict`.execute(db)
    await sql`create unique index if not exists accounts_email_unique on accounts (email collate nocase)`.execute(db)
    await sql`create table if not exists web_sessions (
      token_hash text primary key,
      account_id text not null references accounts (id) on delete cascade,
      created_at integer not null,
      expires_at integer not null
    ) strict`.execute(db)
    await sql`create index if not exists web_sessions_account on web_sessions (account_id)`.execute(db)
    await sql`create table if not exists setup_tokens (
      token_hash text primary key,
      created_at integer not null,
      expires_at integer not null
    ) strict`.execute(db)
  },
}

/**
 * Invitations to a vault for people without an account: the link's token only as its
 * SHA-256 hex. The vault id is the storage's, without a foreign key (the server's migrations
 * never depend on the storage's tables): a deleted vault's invitations fail on acceptance.
 */
const m002Invitations: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await sql`create table invitations (
      id text primary key,
      token_hash text not null unique,
      vault_id text not null,
      email text not null collate nocase,
      role text not null check (role in ('owner', 'editor', 'viewer')),
      invited_by text not null references accounts (id) on delete cascade,
      created_at integer not null,
      expires_at integer not null
    ) strict`.execute(db)
    await sql`create index invitations_vault on invitations (vault_id, expires_at)`.execute(db)
  },
}

/**
 * Issue 25 (account pre-hijacking): whether an account's email was ever proven (an
 * invitation that went only to that address by email, the first account, an account the
 * administrator made), and whether an invitation's link went only by email (so taking it up
 * proves the address). Accounts that exist already count as proven: nothing tells which of
 * them came from a link shown to an inviter.
 */
const m003EmailProof: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await sql`alter table accounts add column email_confirmed integer not null default 1`.execute(db)
    await sql`alter table invitations add column proves_email integer not null default 0`.execute(db)
    await sql`create index invitations_email on invitations (email collate nocase, expires_at)`.execute(db)
  },
}

/**
 * Issue 22: second factors (TOTP secrets sealed under the master key, as base64 text;
 * passkeys), recovery codes (SHA-256 hex only), sign-ins waiting for a second factor, the
 * server-level log of sign-in events, and what the Account page shows of a web session.
 */
const m004Factors: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await sql`create table account_factors (
      id text primary key,
      account_id text not null references accounts (id) on delete cascade,
      kind text not null check (kind in ('totp', 'passkey')),
      name text not null,
      sealed_secret text,
      credential_id text unique,
      public_key text,
      counter integer not null default 0,
      transports text,
      last_step integer not null default 0,
      created_at integer not null,
      last_used_at integer
    ) strict`.execute(db)
    await sql`create index account_factors_account on account_factors (account_id)`.execute(db)
    await sql`create table recovery_codes (
      account_id text not null references accounts (id) on delete cascade,
      code_hash text not null,
      primary key (account_id, code_hash)
    ) strict`.execute(db)
    await sql`create table pending_signins (
      token_hash text primary key,
      account_id text not null references accounts (id) on delete cascade,
      return_to text not null,
      created_at integer not null,
      expires_at integer not null
    ) strict`.execute(db)
    await sql`create table signin_events (
      id text primary key,
      at integer not null,
      account_id text,
      event text not null,
      detail text,
      address text
    ) strict`.execute(db)
    await sql`create index signin_events_at on signin_events (at)`.execute(db)
    await sql`alter table web_sessions add column user_agent text`.execute(db)
    await sql`alter table web_sessions add column address text`.execute(db)
    await sql`alter table web_sessions add column last_used_at integer`.execute(db)
  },
}

/**
 * Issue 22, single sign-on: an account's link to an identity `(issuer, subject)` (one per
 * issuer; a link never moves), memberships a group rule made, sign-ins under way at the
 * provider (state, nonce, PKCE verifier; one use), and break-glass one-time links.
 */
const m005Sso: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await sql`create table account_identities (
      issuer text not null,
      subject text not null,
      account_id text not null references accounts (id) on delete cascade,
      created_at integer not null,
      primary key (issuer, subject),
      unique (account_id, issuer)
    ) strict`.execute(db)
    await sql`create table rule_memberships (
      vault_id text not null,
      account_id text not null references accounts (id) on delete cascade,
      grp text not null,
      role text not null,
      primary key (vault_id, account_id)
    ) strict`.execute(db)
    await sql`create table oidc_states (
      state_hash text primary key,
      verifier text not null,
      nonce text not null,
      return_to text not null,
      link_account_id text,
      created_at integer not null,
      expires_at integer not null
    ) strict`.execute(db)
    await sql`create table login_links (
      token_hash text primary key,
      account_id text not null references accounts (id) on delete cascade,
      created_at integer not null,
      expires_at integer not null
    ) strict`.execute(db)
  },
}

/** Issue 22, passkeys: WebAuthn challenges handed to a page, each used once (5 minutes). */
const m006WebauthnChallenges: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await sql`create table webauthn_challenges (
      challenge text primary key,
      purpose text not null,
      account_id text,
      created_at integer not null,
      expires_at integer not null
    ) strict`.execute(db)
  },
}

/** Listed statically; names sort in the order they run. Never edit a landed migration: add one. */
export const accountMigrations: Record<string, Migration> = Object.freeze({
  '001_accounts': m001Accounts,
  '002_invitations': m002Invitations,
  '003_email_proof': m003EmailProof,
  '004_factors': m004Factors,
  '005_sso': m005Sso,
  '006_webauthn_challenges': m006WebauthnChallenges,
})

/** The server's migration tables, apart from the storage package's `kysely_migration`. */
export const MIGRATION_TABLE = 'envkeep_server_migration'
export const MIGRATION_LOCK_TABLE = 'envkeep_server_migration_lock'

/** Runs the server's pending migrations; a failure fails the start. */
export async function migrateAccounts(db: Kysely<unknown>): Promise<void> {
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => accountMigrations },
    migrationTableName: MIGRATION_TABLE,
    migrationLockTableName: MIGRATION_LOCK_TABLE,
  })
  const { error } = await migrator.migrateToLatest()
  if (error) throw new Error('envkeep-server: migration of the accounts tables failed', { cause: error })
}

export interface AccountsDB {
  accounts: {
    id: string
    /** unique, case-insensitive (collate nocase) */
    email: string
    name: string
    password_hash: string
    created_at: number
    /** 1 once the email is proven (see m003) */
    email_confirmed: number
  }
  web_sessions: {
    token_hash: string
    account_id: string
    created_at: number
    expires_at: number
  }
  setup_tokens: {
    token_hash: string
    created_at: number
    expires_at: number
  }
  invitations: {
    id: string
    token_hash: string
    vault_id: string
    /** case-insensitive (collate nocase) */
    email: string
    role: string
    invited_by: string
    created_at: number
    expires_at: number
    /** 1 when the link went only to the address by email */
    proves_email: number
  }
}

import { sql, type Kysely } from 'kysely'
import type { Migration } from 'kysely/migration'

/**
 * Local accounts of the self-hosting server (@envkeep/server): people with
 * a password, their web sessions and the one-time setup token. Secrets are
 * stored only as hashes (argon2id for passwords, SHA-256 hex for tokens).
 * Times are epoch milliseconds.
 * Migrations never import app code.
 */
export const m003Accounts: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await sql`create table accounts (
      id text primary key,
      email text not null collate nocase,
      name text not null,
      password_hash text not null,
      created_at integer not null
    ) strict`.execute(db)
    await sql`create unique index accounts_email_unique on accounts (email collate nocase)`.execute(db)
    await sql`create table web_sessions (
      token_hash text primary key,
      account_id text not null references accounts (id) on delete cascade,
      created_at integer not null,
      expires_at integer not null
    ) strict`.execute(db)
    await sql`create index web_sessions_account on web_sessions (account_id)`.execute(db)
    await sql`create table setup_tokens (
      token_hash text primary key,
      created_at integer not null,
      expires_at integer not null
    ) strict`.execute(db)
  },
}

import { sql, type Kysely } from 'kysely'
import type { Migration } from 'kysely/migration'

/**
 * OAuth: authorization codes, sign-ins (grants) and token hashes. Only
 * SHA-256 hashes of codes and tokens are stored. Migrations never import app code.
 */
export const m002Oauth: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .createTable('oauth_codes')
      .addColumn('code_hash', 'text', (c) => c.primaryKey())
      .addColumn('client_id', 'text', (c) => c.notNull())
      .addColumn('redirect_uri', 'text', (c) => c.notNull())
      .addColumn('code_challenge', 'text', (c) => c.notNull())
      .addColumn('resource', 'text', (c) => c.notNull())
      .addColumn('scopes', 'text', (c) => c.notNull())
      .addColumn('person_id', 'text', (c) => c.notNull())
      .addColumn('created_at', 'integer', (c) => c.notNull())
      .addColumn('expires_at', 'integer', (c) => c.notNull())
      .addColumn('consumed_at', 'integer')
      .addCheckConstraint('oauth_codes_hash_hex', sql`length(code_hash) = 64`)
      .execute()

    await db.schema
      .createTable('sign_ins')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('person_id', 'text', (c) => c.notNull())
      .addColumn('client_id', 'text', (c) => c.notNull())
      .addColumn('resource', 'text', (c) => c.notNull())
      .addColumn('scopes', 'text', (c) => c.notNull())
      .addColumn('code_hash', 'text', (c) => c.unique())
      .addColumn('created_at', 'integer', (c) => c.notNull())
      .addColumn('expires_at', 'integer', (c) => c.notNull())
      .addColumn('last_used_at', 'integer')
      .addColumn('revoked_at', 'integer')
      .execute()
    await db.schema.createIndex('sign_ins_person').on('sign_ins').columns(['person_id', 'created_at']).execute()

    await db.schema
      .createTable('access_tokens')
      .addColumn('token_hash', 'text', (c) => c.primaryKey())
      .addColumn('sign_in_id', 'text', (c) => c.notNull().references('sign_ins.id').onDelete('cascade'))
      .addColumn('created_at', 'integer', (c) => c.notNull())
      .addColumn('expires_at', 'integer', (c) => c.notNull())
      .addCheckConstraint('access_tokens_hash_hex', sql`length(token_hash) = 64`)
      .execute()
    await db.schema.createIndex('access_tokens_sign_in').on('access_tokens').column('sign_in_id').execute()

    await db.schema
      .createTable('refresh_tokens')
      .addColumn('token_hash', 'text', (c) => c.primaryKey())
      .addColumn('sign_in_id', 'text', (c) => c.notNull().references('sign_ins.id').onDelete('cascade'))
      .addColumn('created_at', 'integer', (c) => c.notNull())
      .addColumn('used_at', 'integer')
      .addCheckConstraint('refresh_tokens_hash_hex', sql`length(token_hash) = 64`)
      .execute()
    await db.schema.createIndex('refresh_tokens_sign_in').on('refresh_tokens').column('sign_in_id').execute()
  },

  async down(db: Kysely<unknown>): Promise<void> {
    await db.schema.dropTable('refresh_tokens').execute()
    await db.schema.dropTable('access_tokens').execute()
    await db.schema.dropTable('sign_ins').execute()
    await db.schema.dropTable('oauth_codes').execute()
  },
}

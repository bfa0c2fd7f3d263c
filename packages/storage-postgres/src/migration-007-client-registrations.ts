import { sql, type Kysely } from 'kysely'
import type { Migration } from 'kysely/migration'

/**
 * MCP clients (issue 21): those registered by RFC 7591 and those known by a
 * client metadata document once a person allowed them (for their names on the
 * Sign-ins page). No foreign keys: a sign-in names its client by id only.
 */
export const m007ClientRegistrations: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await sql`
      create table client_registrations (
        client_id text primary key,
        kind text not null constraint client_registrations_kind check (kind in ('registered', 'document')),
        name text not null,
        redirect_uris jsonb not null constraint client_registrations_uris check (jsonb_typeof(redirect_uris) = 'array'),
        created_at bigint not null,
        expires_at bigint
      );
    `.execute(db)
  },
}

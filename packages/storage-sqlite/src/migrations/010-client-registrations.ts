import { sql, type Kysely } from 'kysely'
import type { Migration } from 'kysely/migration'

/**
 * MCP clients (issue 21): those registered by RFC 7591 and those known by a
 * client metadata document once a person allowed them (for their names on the
 * Sign-ins page). No foreign keys: a sign-in names its client by id only.
 */
export const m010ClientRegistrations: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await sql`create table client_registrations (
      client_id text primary key,
      kind text not null,
      name text not null,
      redirect_uris text not null,
      created_at integer not null,
      expires_at integer,
      constraint client_registrations_kind check (kind in ('registered', 'document')),
      constraint client_registrations_uris check (json_valid(redirect_uris) and json_type(redirect_uris) = 'array')
    )`.execute(db)
  },
}

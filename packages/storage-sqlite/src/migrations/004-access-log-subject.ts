import { sql, type Kysely } from 'kysely'
import type { Migration } from 'kysely/migration'

/**
 * The access log says whom a member change concerns and what it became
 * (`subject`, `detail`), and records vault creation (`vault_created`).
 * SQLite cannot alter a CHECK constraint, so the table is rebuilt with its
 * rows (ids kept) in the migration's transaction.
 * Migrations never import app code: the vocabulary is repeated here.
 */
export const m004AccessLogSubject: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await sql`create table access_log_004 (
      id integer primary key autoincrement,
      vault_id text not null references vaults (id) on delete cascade,
      at integer not null,
      person_id text,
      sign_in_id text,
      client_id text,
      action text not null,
      environment text,
      names text not null default '[]',
      address text,
      subject text,
      detail text,
      constraint access_log_action check (action in ('read', 'refused', 'push_created', 'push_applied', 'push_rejected', 'push_expired', 'variable_set', 'variable_deleted', 'member_added', 'member_changed', 'member_removed', 'environment_created', 'vault_created')),
      constraint access_log_names check (json_valid(names) and json_type(names) = 'array')
    )`.execute(db)
    await sql`insert into access_log_004 (id, vault_id, at, person_id, sign_in_id, client_id, action, environment, names, address)
      select id, vault_id, at, person_id, sign_in_id, client_id, action, environment, names, address from access_log`.execute(db)
    await sql`drop table access_log`.execute(db)
    await sql`alter table access_log_004 rename to access_log`.execute(db)
    // listAccessLog: newest first per vault
    await sql`create index access_log_by_vault on access_log (vault_id, id)`.execute(db)
  },
}

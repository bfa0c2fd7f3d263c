import { sql, type Kysely } from 'kysely'
import type { Migration } from 'kysely/migration'

/**
 * The web app a team lives in (issue 14): a "Require a second person" rule per environment
 * (on for owners-only environments), a reason on rejected pushes, a server-level audit log
 * (what remains of a deleted vault), and the access log's actions `vault_renamed` and
 * `environment_changed` (SQLite cannot alter a CHECK constraint: the table is rebuilt with
 * its rows, ids kept, as in 004 and 006). Migrations never import app code.
 */
export const m007VaultAdmin: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await sql`alter table environments add column second_person integer not null default 0 check (second_person in (0, 1))`.execute(db)
    await sql`update environments set second_person = owners_only`.execute(db)
    await sql`alter table imports add column reason text`.execute(db)
    await sql`create table audit_log (
      id integer primary key autoincrement,
      at integer not null,
      person_id text,
      action text not null,
      vault_id text not null,
      vault_name text not null,
      constraint audit_log_action check (action in ('vault_deleted'))
    )`.execute(db)

    await sql`create table access_log_007 (
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
      constraint access_log_action check (action in ('read', 'refused', 'push_created', 'push_applied', 'push_rejected', 'push_expired', 'variable_set', 'variable_deleted', 'member_added', 'member_changed', 'member_removed', 'environment_created', 'vault_created', 'history_revealed', 'change_reverted', 'environment_restored', 'vault_renamed', 'environment_changed')),
      constraint access_log_names check (json_valid(names) and json_type(names) = 'array')
    )`.execute(db)
    await sql`insert into access_log_007 (id, vault_id, at, person_id, sign_in_id, client_id, action, environment, names, address, subject, detail)
      select id, vault_id, at, person_id, sign_in_id, client_id, action, environment, names, address, subject, detail from access_log`.execute(db)
    await sql`drop table access_log`.execute(db)
    await sql`alter table access_log_007 rename to access_log`.execute(db)
    await sql`create index access_log_by_vault on access_log (vault_id, id)`.execute(db)
  },
}

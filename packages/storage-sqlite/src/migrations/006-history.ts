import { sql, type Kysely } from 'kysely'
import type { Migration } from 'kysely/migration'

/**
 * History (issue 12): change sets and their entries, each entry with the
 * value before and after sealed for its own row (the domain seals them;
 * additional data: vault, environment, name, change set, side). And the
 * access log's three new actions: SQLite cannot alter a CHECK constraint,
 * so the table is rebuilt with its rows (ids kept), as in 004.
 * Migrations never import app code: the vocabulary is repeated here.
 */
export const m006History: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await sql`create table change_sets (
      seq integer primary key autoincrement,
      id text not null,
      vault_id text not null,
      environment text not null,
      at integer not null,
      by text,
      how text not null,
      ref text,
      constraint change_sets_id unique (id),
      constraint change_sets_environment foreign key (vault_id, environment) references environments (vault_id, name) on delete cascade,
      constraint change_sets_how check (how in ('push', 'page', 'admin', 'revert', 'restore'))
    )`.execute(db)
    await sql`create index change_sets_by_environment on change_sets (vault_id, environment, seq)`.execute(db)
    await sql`create index change_sets_by_ref on change_sets (vault_id, ref) where ref is not null`.execute(db)
    await sql`create table change_entries (
      change_set_seq integer not null references change_sets (seq) on delete cascade,
      name text not null,
      kind text not null,
      before blob,
      after blob,
      primary key (change_set_seq, name),
      constraint change_entries_kind check (kind in ('added', 'changed', 'deleted')),
      constraint change_entries_before check ((kind = 'added') = (before is null)),
      constraint change_entries_after check ((kind = 'deleted') = (after is null))
    ) without rowid`.execute(db)
    await sql`create index change_entries_by_name on change_entries (name, change_set_seq)`.execute(db)

    await sql`create table access_log_006 (
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
      constraint access_log_action check (action in ('read', 'refused', 'push_created', 'push_applied', 'push_rejected', 'push_expired', 'variable_set', 'variable_deleted', 'member_added', 'member_changed', 'member_removed', 'environment_created', 'vault_created', 'history_revealed', 'change_reverted', 'environment_restored')),
      constraint access_log_names check (json_valid(names) and json_type(names) = 'array')
    )`.execute(db)
    await sql`insert into access_log_006 (id, vault_id, at, person_id, sign_in_id, client_id, action, environment, names, address, subject, detail)
      select id, vault_id, at, person_id, sign_in_id, client_id, action, environment, names, address, subject, detail from access_log`.execute(db)
    await sql`drop table access_log`.execute(db)
    await sql`alter table access_log_006 rename to access_log`.execute(db)
    await sql`create index access_log_by_vault on access_log (vault_id, id)`.execute(db)
  },
}

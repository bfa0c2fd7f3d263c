import { sql, type Kysely } from 'kysely'
import type { Migration } from 'kysely/migration'

/**
 * Issue 25: the access log's actions invitation_sent, invitation_revoked, webhook_added and
 * webhook_removed (SQLite cannot alter a CHECK constraint: the table is rebuilt with its rows,
 * ids kept, as in 007). Webhook URLs need no column: the domain seals each URL with the
 * webhook's secret in `sealed_secret` and keeps only a masked form in `url`, sealing the
 * rows written before on the server's first start with this version (needs the master key).
 * Migrations never import app code: the vocabulary is repeated here.
 */
export const m009AccessLogIssue25: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await sql`create table access_log_009 (
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
      constraint access_log_action check (action in ('read', 'refused', 'push_created', 'push_applied', 'push_rejected', 'push_expired', 'variable_set', 'variable_deleted', 'member_added', 'member_changed', 'member_removed', 'environment_created', 'vault_created', 'history_revealed', 'change_reverted', 'environment_restored', 'vault_renamed', 'environment_changed', 'invitation_sent', 'invitation_revoked', 'webhook_added', 'webhook_removed')),
      constraint access_log_names check (json_valid(names) and json_type(names) = 'array')
    )`.execute(db)
    await sql`insert into access_log_009 (id, vault_id, at, person_id, sign_in_id, client_id, action, environment, names, address, subject, detail)
      select id, vault_id, at, person_id, sign_in_id, client_id, action, environment, names, address, subject, detail from access_log`.execute(db)
    await sql`drop table access_log`.execute(db)
    await sql`alter table access_log_009 rename to access_log`.execute(db)
    await sql`create index access_log_by_vault on access_log (vault_id, id)`.execute(db)
  },
}

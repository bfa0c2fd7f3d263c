import { sql, type Kysely } from 'kysely'
import type { Migration } from 'kysely/migration'

/**
 * The access log's action becomes plain text (issue 19): the list of actions is one domain
 * constant (`ACCESS_ACTIONS` in @envkeep/env-api-plugin), so no CHECK repeats it and a new
 * action needs no migration. SQLite cannot drop a constraint: the table is rebuilt one last
 * time with its rows, ids kept, as in 004, 006, 007 and 009.
 */
export const m011AccessLogActions: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await sql`create table access_log_011 (
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
      constraint access_log_names check (json_valid(names) and json_type(names) = 'array')
    )`.execute(db)
    await sql`insert into access_log_011 (id, vault_id, at, person_id, sign_in_id, client_id, action, environment, names, address, subject, detail)
      select id, vault_id, at, person_id, sign_in_id, client_id, action, environment, names, address, subject, detail from access_log`.execute(db)
    await sql`drop table access_log`.execute(db)
    await sql`alter table access_log_011 rename to access_log`.execute(db)
    await sql`create index access_log_by_vault on access_log (vault_id, id)`.execute(db)
  },
}

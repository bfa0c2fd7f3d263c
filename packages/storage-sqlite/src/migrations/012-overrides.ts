import { sql, type Kysely } from 'kysely'
import type { Migration } from 'kysely/migration'

/**
 * Personal overrides (issue 24): the environments whose owners allow them,
 * and each person's sealed value of a name there. Both go with their
 * environment (and so their vault); turning the switch off deletes the rows.
 */
export const m012Overrides: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await sql`create table override_environments (
      vault_id text not null,
      environment text not null,
      constraint override_environments_pk primary key (vault_id, environment),
      constraint override_environments_environment foreign key (vault_id, environment) references environments (vault_id, name) on delete cascade
    )`.execute(db)
    await sql`create table overrides (
      vault_id text not null,
      environment text not null,
      name text not null,
      person_id text not null,
      sealed blob not null,
      updated_at integer not null,
      constraint overrides_pk primary key (vault_id, environment, name, person_id),
      constraint overrides_allowed foreign key (vault_id, environment) references override_environments (vault_id, environment) on delete cascade,
      constraint overrides_sealed check (typeof(sealed) = 'blob' and length(sealed) > 0)
    )`.execute(db)
  },
  async down(db: Kysely<unknown>): Promise<void> {
    await sql`drop table overrides`.execute(db)
    await sql`drop table override_environments`.execute(db)
  },
}

import { sql, type Kysely } from 'kysely'
import type { Migration } from 'kysely/migration'

/**
 * The change counter (issue 20): one row, bumped by triggers in the same
 * transaction as every change of what the plugin's caches hold, so every
 * process on this file sees a change by reading one number
 * (storage-sql's changes.ts, change-watch.ts). Sign-ins count when revoked,
 * ended or changed (not when their last use is recorded); tokens when
 * deleted or changed (a new one is in no cache); variables through their
 * environment's version, which every change of them bumps.
 */
const BUMP = 'update envkeep_changes set counter = counter + 1 where id = 1;'

const TRIGGERS: readonly (readonly [string, string])[] = [
  ['vaults', 'after insert on vaults'],
  ['vaults_update', 'after update on vaults'],
  ['vaults_delete', 'after delete on vaults'],
  ['members', 'after insert on members'],
  ['members_update', 'after update on members'],
  ['members_delete', 'after delete on members'],
  ['environments', 'after insert on environments'],
  ['environments_update', 'after update on environments'],
  ['environments_delete', 'after delete on environments'],
  ['sign_ins_update', 'after update of person_id, client_id, resource, scopes, expires_at, revoked_at, label on sign_ins'],
  ['sign_ins_delete', 'after delete on sign_ins'],
  ['access_tokens_update', 'after update on access_tokens'],
  ['access_tokens_delete', 'after delete on access_tokens'],
  ['ci_identities', 'after insert on ci_identities'],
  ['ci_identities_update', 'after update on ci_identities'],
  ['ci_identities_delete', 'after delete on ci_identities'],
  ['override_environments', 'after insert on override_environments'],
  ['override_environments_delete', 'after delete on override_environments'],
  ['overrides', 'after insert on overrides'],
  ['overrides_update', 'after update on overrides'],
  ['overrides_delete', 'after delete on overrides'],
]

export const m014ChangeCounter: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await sql`create table envkeep_changes (id integer primary key check (id = 1), counter integer not null)`.execute(db)
    await sql`insert into envkeep_changes (id, counter) values (1, 0)`.execute(db)
    for (const [name, when] of TRIGGERS) await sql.raw(`create trigger envkeep_changed_${name} ${when} begin ${BUMP} end`).execute(db)
  },
}

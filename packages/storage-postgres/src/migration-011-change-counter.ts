import { sql, type Kysely } from 'kysely'
import type { Migration } from 'kysely/migration'

/**
 * The change counter (issue 20): one row, bumped by triggers in the same
 * transaction as every change of what the plugin's caches hold, with a
 * NOTIFY on `envkeep_changes` (sent at commit) for the processes listening
 * (change-listener.ts; the counter is their safety net). The triggers are
 * deferred constraint triggers: they run at commit, after the transaction's
 * own row locks, so the one counter row never joins a deadlock, and none of
 * these tables is written in bulk. Sign-ins count when revoked, ended or
 * changed (not when their last use is recorded); tokens when deleted or
 * changed (a new one is in no cache); variables through their environment's
 * version, which every change of them bumps.
 */
const TRIGGERS: readonly (readonly [string, string])[] = [
  ['vaults', 'insert or update or delete on vaults'],
  ['members', 'insert or update or delete on members'],
  ['environments', 'insert or update or delete on environments'],
  ['sign_ins', 'update of person_id, client_id, resource, scopes, expires_at, revoked_at, label or delete on sign_ins'],
  ['access_tokens', 'update or delete on access_tokens'],
  ['ci_identities', 'insert or update or delete on ci_identities'],
  ['override_environments', 'insert or update or delete on override_environments'],
  ['overrides', 'insert or update or delete on overrides'],
]

export const m011ChangeCounter: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await sql`
      create table envkeep_changes (
        id integer primary key constraint envkeep_changes_one check (id = 1),
        counter bigint not null
      );
      insert into envkeep_changes (id, counter) values (1, 0);
      create function envkeep_changed() returns trigger language plpgsql as $$
      begin
        update envkeep_changes set counter = counter + 1 where id = 1;
        perform pg_notify('envkeep_changes', '');
        return null;
      end
      $$;
    `.execute(db)
    for (const [name, when] of TRIGGERS)
      await sql
        .raw(`create constraint trigger envkeep_changed_${name} after ${when} deferrable initially deferred for each row execute function envkeep_changed()`)
        .execute(db)
  },
}

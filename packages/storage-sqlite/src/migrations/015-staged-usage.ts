import { sql, type Kysely } from 'kysely'
import type { Migration } from 'kysely/migration'

/**
 * What the pending pushes of each vault hold, kept in the transaction of every write that
 * stages or drops staged values (issue 20): the storage limit reads one row instead of
 * summing every staged value of every pending push. A table of its own, not columns of
 * `vaults`, so a push does not touch the vault's row (the change counter's triggers).
 * Filled from the pushes pending now.
 */
export const m015StagedUsage: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await sql`
      create table staged_usage (
        vault_id text primary key not null references vaults (id) on delete cascade,
        values_count integer not null check (values_count >= 0),
        bytes integer not null check (bytes >= 0)
      )`.execute(db)
    await sql`
      insert into staged_usage (vault_id, values_count, bytes)
      select i.vault_id, count(*), sum(length(iv.sealed))
      from import_values iv join imports i on i.id = iv.import_id
      where i.status = 'pending'
      group by i.vault_id`.execute(db)
  },
}

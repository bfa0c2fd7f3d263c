import { sql, type Kysely } from 'kysely'
import type { Migration } from 'kysely/migration'

/** Pushes that delete names (issue 25: a deletion proposed from the pages); none for older pushes. */
export const m013PushDeletes: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await sql`alter table imports add column deletes text not null default '[]'`.execute(db)
  },
}

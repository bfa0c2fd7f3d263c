import type { Kysely, Migration } from 'kysely'

/** Placeholder: filled in by its issue. Migrations never import app code. */
export const m003Accounts: Migration = {
  async up(_db: Kysely<unknown>): Promise<void> {},
}

import type { Migration } from 'kysely/migration'

/**
 * Was: the self-hosting server's accounts, web sessions and setup token.
 * Those tables belong to @envkeep/server now, which migrates them under its
 * own migration table (and adopts the tables this migration made in data
 * directories of earlier versions). Kept, as a step that does nothing, so
 * databases that ran it still match the list of migrations.
 */
export const m003Accounts: Migration = {
  async up(): Promise<void> {},
}

import { sql, type Kysely } from 'kysely'
import type { Migration } from 'kysely/migration'

/**
 * Vaults, members, environments, sealed variables, pushes (imports) with
 * their staged values, and the access log.
 *
 * Conventions: times are integer milliseconds since the epoch (UTC);
 * booleans are 0/1 with a CHECK; values are BLOBs (nonce ‖ ciphertext ‖ tag);
 * lists of names are JSON arrays in TEXT. Constraints are named so a
 * violation's message names the rule, never the row.
 * Migrations never import app code: the vocabularies are repeated here.
 */
export const m001Vaults: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .createTable('vaults')
      .addColumn('id', 'text', (c) => c.primaryKey().notNull())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('plan', 'text', (c) => c.notNull())
      .addColumn('require_second_person', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('wrapped_key', 'blob')
      .addColumn('created_at', 'integer', (c) => c.notNull())
      .addCheckConstraint('vaults_require_second_person', sql`require_second_person in (0, 1)`)
      .addCheckConstraint('vaults_name', sql`length(name) > 0`)
      .execute()
    await db.schema.createIndex('vaults_by_name').on('vaults').columns(['name']).execute()

    await db.schema
      .createTable('members')
      .addColumn('vault_id', 'text', (c) => c.notNull().references('vaults.id').onDelete('cascade'))
      .addColumn('person_id', 'text', (c) => c.notNull())
      .addColumn('role', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('members_pk', ['vault_id', 'person_id'])
      .addCheckConstraint('members_role', sql`role in ('owner', 'editor', 'viewer')`)
      .execute()
    // listVaults: the vaults of one person
    await db.schema.createIndex('members_by_person').on('members').columns(['person_id', 'vault_id']).execute()

    await db.schema
      .createTable('environments')
      .addColumn('vault_id', 'text', (c) => c.notNull().references('vaults.id').onDelete('cascade'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('owners_only', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('version', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('created_at', 'integer', (c) => c.notNull())
      .addPrimaryKeyConstraint('environments_pk', ['vault_id', 'name'])
      .addCheckConstraint('environments_owners_only', sql`owners_only in (0, 1)`)
      .addCheckConstraint('environments_version', sql`version >= 0`)
      .addCheckConstraint('environments_name', sql`length(name) between 1 and 63`)
      .execute()

    // The primary key (vault_id, environment, name) is the index of every
    // read: an environment's variables come out of it in name order.
    await db.schema
      .createTable('variables')
      .addColumn('vault_id', 'text', (c) => c.notNull())
      .addColumn('environment', 'text', (c) => c.notNull())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('sealed', 'blob', (c) => c.notNull())
      .addColumn('updated_at', 'integer', (c) => c.notNull())
      .addColumn('updated_by', 'text')
      .addPrimaryKeyConstraint('variables_pk', ['vault_id', 'environment', 'name'])
      .addForeignKeyConstraint('variables_environment', ['vault_id', 'environment'], 'environments', ['vault_id', 'name'], (f) => f.onDelete('cascade'))
      .addCheckConstraint('variables_name', sql`length(name) between 1 and 256`)
      .addCheckConstraint('variables_sealed', sql`typeof(sealed) = 'blob' and length(sealed) > 0`)
      .execute()

    await db.schema
      .createTable('imports')
      .addColumn('id', 'text', (c) => c.primaryKey().notNull())
      .addColumn('vault_id', 'text', (c) => c.notNull())
      .addColumn('environment', 'text', (c) => c.notNull())
      .addColumn('sender_id', 'text', (c) => c.notNull())
      .addColumn('sign_in_id', 'text')
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('names', 'text', (c) => c.notNull())
      .addColumn('overwrites', 'text', (c) => c.notNull())
      .addColumn('refused', 'text', (c) => c.notNull())
      .addColumn('created_at', 'integer', (c) => c.notNull())
      .addColumn('expires_at', 'integer', (c) => c.notNull())
      .addColumn('decided_at', 'integer')
      .addColumn('decided_by', 'text')
      .addForeignKeyConstraint('imports_environment', ['vault_id', 'environment'], 'environments', ['vault_id', 'name'], (f) => f.onDelete('cascade'))
      .addCheckConstraint('imports_status', sql`status in ('pending', 'applied', 'rejected', 'expired')`)
      .addCheckConstraint('imports_decided', sql`(status = 'pending') = (decided_at is null)`)
      .addCheckConstraint('imports_lists', sql`json_valid(names) and json_valid(overwrites) and json_valid(refused)`)
      .execute()
    // listImports (per vault, by status, newest first) and the storage-limit sum
    await db.schema.createIndex('imports_by_vault').on('imports').columns(['vault_id', 'status', 'created_at']).execute()
    // expireImports: pending pushes by expiry
    await db.schema.createIndex('imports_by_expiry').on('imports').columns(['status', 'expires_at']).execute()

    // Staged values exist only while their push is pending.
    await db.schema
      .createTable('import_values')
      .addColumn('import_id', 'text', (c) => c.notNull().references('imports.id').onDelete('cascade'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('sealed', 'blob', (c) => c.notNull())
      .addPrimaryKeyConstraint('import_values_pk', ['import_id', 'name'])
      .addCheckConstraint('import_values_sealed', sql`typeof(sealed) = 'blob' and length(sealed) > 0`)
      .execute()

    await db.schema
      .createTable('access_log')
      .addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
      .addColumn('vault_id', 'text', (c) => c.notNull().references('vaults.id').onDelete('cascade'))
      .addColumn('at', 'integer', (c) => c.notNull())
      .addColumn('person_id', 'text')
      .addColumn('sign_in_id', 'text')
      .addColumn('client_id', 'text')
      .addColumn('action', 'text', (c) => c.notNull())
      .addColumn('environment', 'text')
      .addColumn('names', 'text', (c) => c.notNull().defaultTo('[]'))
      .addColumn('address', 'text')
      .addCheckConstraint(
        'access_log_action',
        sql`action in ('read', 'refused', 'push_created', 'push_applied', 'push_rejected', 'push_expired', 'variable_set', 'variable_deleted', 'member_added', 'member_changed', 'member_removed', 'environment_created')`,
      )
      .addCheckConstraint('access_log_names', sql`json_valid(names) and json_type(names) = 'array'`)
      .execute()
    // listAccessLog: newest first per vault
    await db.schema.createIndex('access_log_by_vault').on('access_log').columns(['vault_id', 'id']).execute()
  },
}

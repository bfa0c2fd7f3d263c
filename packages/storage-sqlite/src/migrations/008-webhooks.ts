import { sql, type Kysely } from 'kysely'
import type { Migration } from 'kysely/migration'

/**
 * Webhooks (issue 14, item 5): a vault's webhooks, each signing secret sealed by the domain
 * (never stored plain), and the outbox of their deliveries, one per (webhook, push, event).
 * Deleting a vault deletes its webhooks, and a webhook its deliveries. (007 is another
 * change's.) Migrations never import app code: the vocabulary is repeated here.
 */
export const m008Webhooks: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await sql`create table webhooks (
      id text primary key,
      vault_id text not null references vaults (id) on delete cascade,
      url text not null,
      format text not null,
      events text not null,
      sealed_secret blob,
      created_at integer not null,
      created_by text,
      constraint webhooks_format check (format in ('generic', 'slack')),
      constraint webhooks_events check (json_valid(events) and json_type(events) = 'array')
    )`.execute(db)
    await sql`create index webhooks_by_vault on webhooks (vault_id, created_at)`.execute(db)
    await sql`create table webhook_deliveries (
      id integer primary key autoincrement,
      webhook_id text not null references webhooks (id) on delete cascade,
      push_id text not null references imports (id) on delete cascade,
      event text not null,
      occurred_at integer not null,
      status text not null default 'pending',
      attempts integer not null default 0,
      next_attempt_at integer,
      last_attempt_at integer,
      last_status integer,
      last_error text,
      claim_token text,
      claimed_until integer,
      constraint webhook_deliveries_once unique (webhook_id, push_id, event),
      constraint webhook_deliveries_event check (event in ('push.created', 'push.decided', 'push.expired')),
      constraint webhook_deliveries_status check (status in ('pending', 'delivered', 'failed'))
    )`.execute(db)
    await sql`create index webhook_deliveries_due on webhook_deliveries (next_attempt_at) where status = 'pending'`.execute(db)
    await sql`create index webhook_deliveries_by_webhook on webhook_deliveries (webhook_id, occurred_at)`.execute(db)
    await sql`create index webhook_deliveries_push on webhook_deliveries (push_id)`.execute(db)
  },
}

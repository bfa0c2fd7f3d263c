import type { ClaimedDelivery, DeliveryAttempt, DeliveryRecord, NewWebhook, WebhookEvent, WebhookRecord, WebhookStore } from '@envkeep/env-api-plugin'
import type { OpenDatabase } from './database.js'
import { prepared } from './limits.js'
import { runSync } from './sqlite-errors.js'

/** The webhook store on SQLite (webhook-store.ts in the plugin): tables webhooks and webhook_deliveries (migration 008). */
export function createSqliteWebhookStore(d: OpenDatabase): WebhookStore {
  return new SqliteWebhookStore(d)
}

const EVENT_ORDER: readonly WebhookEvent[] = ['push.created', 'push.decided', 'push.expired']

interface WebhookRow {
  id: string
  vault_id: string
  url: string
  format: WebhookRecord['format']
  events: string
  created_at: number
  created_by: string | null
}

interface DeliveryRow {
  id: number
  webhook_id: string
  vault_id: string
  push_id: string
  event: WebhookEvent
  occurred_at: number
  status: DeliveryRecord['status']
  attempts: number
  next_attempt_at: number | null
  last_attempt_at: number | null
  last_status: number | null
  last_error: string | null
}

const WEBHOOK_COLUMNS = 'w.id, w.vault_id, w.url, w.format, w.events, w.created_at, w.created_by'
const DELIVERY_COLUMNS =
  'd.id, d.webhook_id, w.vault_id, d.push_id, d.event, d.occurred_at, d.status, d.attempts, d.next_attempt_at, d.last_attempt_at, d.last_status, d.last_error'

function webhookOf(r: WebhookRow): WebhookRecord {
  const events = JSON.parse(r.events) as WebhookEvent[]
  return {
    id: r.id,
    vaultId: r.vault_id,
    url: r.url,
    format: r.format,
    events: EVENT_ORDER.filter((e) => events.includes(e)),
    createdAt: new Date(r.created_at),
    createdBy: r.created_by,
  }
}

function deliveryOf(r: DeliveryRow): DeliveryRecord {
  return {
    id: String(r.id),
    webhookId: r.webhook_id,
    vaultId: r.vault_id,
    pushId: r.push_id,
    event: r.event,
    occurredAt: new Date(r.occurred_at),
    status: r.status,
    attempts: r.attempts,
    nextAttemptAt: r.next_attempt_at === null ? null : new Date(r.next_attempt_at),
    lastAttemptAt: r.last_attempt_at === null ? null : new Date(r.last_attempt_at),
    lastStatus: r.last_status,
    lastError: r.last_error,
  }
}

const bytes = (u: Uint8Array): Buffer => (Buffer.isBuffer(u) ? u : Buffer.from(u.buffer, u.byteOffset, u.byteLength))

/** Every push event since @since (of push @push, or all when null), as rows (push_id, vault_id, event, at). */
const EVENTS_SQL = `
  select id as push_id, vault_id, 'push.created' as event, created_at as at from imports where created_at >= @since and (@push is null or id = @push)
  union all
  select id, vault_id, 'push.decided', decided_at from imports where status in ('applied', 'rejected') and decided_at >= @since and (@push is null or id = @push)
  union all
  select id, vault_id, 'push.expired', decided_at from imports where status = 'expired' and decided_at >= @since and (@push is null or id = @push)`

class SqliteWebhookStore implements WebhookStore {
  readonly #d: OpenDatabase

  constructor(d: OpenDatabase) {
    this.#d = d
  }

  #q(text: string) {
    return prepared(this.#d, text)
  }

  createWebhook(w: NewWebhook): Promise<WebhookRecord> {
    const events = EVENT_ORDER.filter((e) => w.events.includes(e))
    return runSync(
      this.#d,
      'immediate',
      () => {
        this.#q('insert into webhooks (id, vault_id, url, format, events, sealed_secret, created_at, created_by) values (?, ?, ?, ?, ?, ?, ?, ?)').run(
          w.id,
          w.vaultId,
          w.url,
          w.format,
          JSON.stringify(events),
          w.sealedSecret && bytes(w.sealedSecret),
          w.createdAt.getTime(),
          w.createdBy,
        )
        return { id: w.id, vaultId: w.vaultId, url: w.url, format: w.format, events, createdAt: new Date(w.createdAt.getTime()), createdBy: w.createdBy }
      },
      'webhooks',
    )
  }

  listWebhooks(vaultId: string): Promise<WebhookRecord[]> {
    return runSync(
      this.#d,
      'none',
      () =>
        (
          this.#q(`select ${WEBHOOK_COLUMNS}, w.sealed_secret from webhooks w where w.vault_id = ? order by w.created_at, w.rowid`).all(
            vaultId,
          ) as (WebhookRow & {
            sealed_secret: Buffer | null
          })[]
        ).map((r) => ({ ...webhookOf(r), sealedSecret: r.sealed_secret && new Uint8Array(r.sealed_secret) })),
      'webhooks',
    )
  }

  sealWebhookUrl(input: { vaultId: string; webhookId: string; ifUrl: string; url: string; sealedSecret: Uint8Array }): Promise<boolean> {
    return runSync(
      this.#d,
      'immediate',
      () =>
        this.#q('update webhooks set url = ?, sealed_secret = ? where id = ? and vault_id = ? and url = ?').run(
          input.url,
          bytes(input.sealedSecret),
          input.webhookId,
          input.vaultId,
          input.ifUrl,
        ).changes > 0,
      'webhooks',
    )
  }

  deleteWebhook(vaultId: string, webhookId: string): Promise<boolean> {
    // the deliveries go by the foreign key's cascade
    return runSync(this.#d, 'immediate', () => this.#q('delete from webhooks where id = ? and vault_id = ?').run(webhookId, vaultId).changes > 0, 'webhooks')
  }

  enqueueDeliveries(input: { now: Date; since: Date; pushId?: string }): Promise<number> {
    return runSync(
      this.#d,
      'immediate',
      () =>
        this.#q(
          `insert into webhook_deliveries (webhook_id, push_id, event, occurred_at, status, attempts, next_attempt_at)
           select w.id, e.push_id, e.event, e.at, 'pending', 0, @now
           from (${EVENTS_SQL}) e
           join webhooks w on w.vault_id = e.vault_id and e.at >= w.created_at
           where exists (select 1 from json_each(w.events) j where j.value = e.event)
           on conflict (webhook_id, push_id, event) do nothing`,
        ).run({ since: input.since.getTime(), push: input.pushId ?? null, now: input.now.getTime() }).changes,
      'webhook_deliveries',
    )
  }

  claimDeliveries(input: { now: Date; leaseMs: number; limit: number; token: string }): Promise<ClaimedDelivery[]> {
    const now = input.now.getTime()
    return runSync(
      this.#d,
      'immediate',
      () => {
        const claimed = this.#q(
          `update webhook_deliveries set claim_token = ?, claimed_until = ?
           where id in (select id from webhook_deliveries
                        where status = 'pending' and next_attempt_at <= ? and (claimed_until is null or claimed_until <= ?)
                        order by next_attempt_at, id limit ?)
           returning id`,
        ).all(input.token, now + input.leaseMs, now, now, Math.max(0, Math.trunc(input.limit))) as { id: number }[]
        if (claimed.length === 0) return []
        const rows = this.#d.sqlite
          .prepare(
            `select ${DELIVERY_COLUMNS}, ${WEBHOOK_COLUMNS.replace('w.id', 'w.id as w_id').replace('w.vault_id', 'w.vault_id as w_vault_id')}, w.sealed_secret
             from webhook_deliveries d join webhooks w on w.id = d.webhook_id
             where d.id in (${claimed.map(() => '?').join(', ')}) order by d.next_attempt_at, d.id`,
          )
          .all(...claimed.map((c) => c.id)) as (DeliveryRow & WebhookRow & { w_id: string; w_vault_id: string; sealed_secret: Buffer | null })[]
        return rows.map((r) => ({
          ...deliveryOf(r),
          webhook: webhookOf({ ...r, id: r.w_id, vault_id: r.w_vault_id }),
          sealedSecret: r.sealed_secret && new Uint8Array(r.sealed_secret),
        }))
      },
      'webhook_deliveries',
    )
  }

  finishAttempt(a: DeliveryAttempt): Promise<boolean> {
    const id = Number(a.deliveryId)
    if (!Number.isSafeInteger(id)) return Promise.resolve(false)
    return runSync(
      this.#d,
      'immediate',
      () =>
        this.#q(
          `update webhook_deliveries set status = ?, attempts = attempts + 1, next_attempt_at = ?, last_attempt_at = ?, last_status = ?, last_error = ?,
             claim_token = null, claimed_until = null
           where id = ? and claim_token = ?`,
        ).run(
          a.outcome === 'retry' ? 'pending' : a.outcome,
          a.outcome === 'retry' ? (a.nextAttemptAt?.getTime() ?? a.at.getTime()) : null,
          a.at.getTime(),
          a.httpStatus,
          a.error,
          id,
          a.claimToken,
        ).changes > 0,
      'webhook_deliveries',
    )
  }

  listDeliveries(vaultId: string, webhookId: string, limit: number): Promise<DeliveryRecord[]> {
    return runSync(
      this.#d,
      'none',
      () =>
        (
          this.#q(
            `select ${DELIVERY_COLUMNS} from webhook_deliveries d join webhooks w on w.id = d.webhook_id
             where w.vault_id = ? and d.webhook_id = ? order by d.occurred_at desc, d.id desc limit ?`,
          ).all(vaultId, webhookId, Math.max(0, Math.trunc(limit))) as DeliveryRow[]
        ).map(deliveryOf),
      'webhook_deliveries',
    )
  }

  pruneDeliveries(olderThan: Date): Promise<number> {
    return runSync(
      this.#d,
      'immediate',
      () => this.#q(`delete from webhook_deliveries where status <> 'pending' and occurred_at < ?`).run(olderThan.getTime()).changes,
      'webhook_deliveries',
    )
  }
}

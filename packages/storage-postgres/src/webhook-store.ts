import type { ClaimedDelivery, DeliveryAttempt, DeliveryRecord, NewWebhook, WebhookEvent, WebhookRecord, WebhookStore } from '@envkeep/env-api-plugin'
import { sql, type Kysely } from 'kysely'
import { read } from './database.js'
import { bytes, copy, json, ms, rows } from './rows.js'

type Q = Kysely<unknown>

const EVENT_ORDER: readonly WebhookEvent[] = ['push.created', 'push.decided', 'push.expired']

interface WebhookRow {
  id: string
  vault_id: string
  url: string
  format: WebhookRecord['format']
  events: WebhookEvent[]
  created_at: string
  created_by: string | null
}

interface DeliveryRow {
  id: string
  webhook_id: string
  vault_id: string
  push_id: string
  event: WebhookEvent
  occurred_at: string
  status: DeliveryRecord['status']
  attempts: number
  next_attempt_at: string | null
  last_attempt_at: string | null
  last_status: number | null
  last_error: string | null
}

function webhookOf(r: WebhookRow): WebhookRecord {
  return {
    id: r.id,
    vaultId: r.vault_id,
    url: r.url,
    format: r.format,
    events: EVENT_ORDER.filter((e) => r.events.includes(e)),
    createdAt: new Date(ms(r.created_at)),
    createdBy: r.created_by,
  }
}

const date = (v: string | null): Date | null => (v === null ? null : new Date(ms(v)))

function deliveryOf(r: DeliveryRow): DeliveryRecord {
  return {
    id: String(r.id),
    webhookId: r.webhook_id,
    vaultId: r.vault_id,
    pushId: r.push_id,
    event: r.event,
    occurredAt: new Date(ms(r.occurred_at)),
    status: r.status,
    attempts: Number(r.attempts),
    nextAttemptAt: date(r.next_attempt_at),
    lastAttemptAt: date(r.last_attempt_at),
    lastStatus: r.last_status === null ? null : Number(r.last_status),
    lastError: r.last_error,
  }
}

/**
 * The webhook store on PostgreSQL (webhook-store.ts in the plugin). Each method is one
 * statement: enqueueing relies on the (webhook, push, event) unique constraint, claiming on
 * `for update skip locked`, so several server processes on one database deliver each once.
 */
export class PostgresWebhookStore implements WebhookStore {
  readonly #db: Q

  constructor(db: Q) {
    this.#db = db
  }

  createWebhook(w: NewWebhook): Promise<WebhookRecord> {
    const events = EVENT_ORDER.filter((e) => w.events.includes(e))
    return read(async () => {
      const [r] = await rows<WebhookRow>(
        this.#db,
        sql`insert into webhooks (id, vault_id, url, format, events, sealed_secret, created_at, created_by)
            values (${w.id}, ${w.vaultId}, ${w.url}, ${w.format}, ${json(events)}, ${w.sealedSecret && bytes(w.sealedSecret)}, ${w.createdAt.getTime()}, ${w.createdBy})
            returning id, vault_id, url, format, events, created_at, created_by`,
      )
      return webhookOf(r as WebhookRow)
    })
  }

  listWebhooks(vaultId: string): Promise<WebhookRecord[]> {
    return read(async () =>
      (
        await rows<WebhookRow & { sealed_secret: Buffer | null }>(
          this.#db,
          sql`select id, vault_id, url, format, events, created_at, created_by, sealed_secret from webhooks where vault_id = ${vaultId} order by created_at, id`,
        )
      ).map((r) => ({ ...webhookOf(r), sealedSecret: r.sealed_secret && copy(r.sealed_secret) })),
    )
  }

  sealWebhookUrl(input: { vaultId: string; webhookId: string; ifUrl: string; url: string; sealedSecret: Uint8Array }): Promise<boolean> {
    return read(async () => {
      const r = await sql`update webhooks set url = ${input.url}, sealed_secret = ${bytes(input.sealedSecret)}
        where id = ${input.webhookId} and vault_id = ${input.vaultId} and url = ${input.ifUrl}`.execute(this.#db)
      return Number(r.numAffectedRows ?? 0) > 0
    })
  }

  deleteWebhook(vaultId: string, webhookId: string): Promise<boolean> {
    // the deliveries go by the foreign key's cascade
    return read(async () => {
      const r = await sql`delete from webhooks where id = ${webhookId} and vault_id = ${vaultId}`.execute(this.#db)
      return Number(r.numAffectedRows ?? 0) > 0
    })
  }

  enqueueDeliveries(input: { now: Date; since: Date; pushId?: string }): Promise<number> {
    const since = input.since.getTime()
    const push = input.pushId ?? null
    const onePush = push === null ? sql`` : sql`and id = ${push}`
    return read(async () => {
      const r = await sql`
        insert into webhook_deliveries (webhook_id, push_id, event, occurred_at, status, attempts, next_attempt_at)
        select w.id, e.push_id, e.event, e.at, 'pending', 0, ${input.now.getTime()}
        from (
          select id as push_id, vault_id, 'push.created' as event, created_at as at from imports where created_at >= ${since} ${onePush}
          union all
          select id, vault_id, 'push.decided', decided_at from imports where status in ('applied', 'rejected') and decided_at >= ${since} ${onePush}
          union all
          select id, vault_id, 'push.expired', decided_at from imports where status = 'expired' and decided_at >= ${since} ${onePush}
        ) e
        join webhooks w on w.vault_id = e.vault_id and e.at >= w.created_at and w.events @> jsonb_build_array(e.event)
        on conflict (webhook_id, push_id, event) do nothing`.execute(this.#db)
      return Number(r.numAffectedRows ?? 0)
    })
  }

  claimDeliveries(input: { now: Date; leaseMs: number; limit: number; token: string }): Promise<ClaimedDelivery[]> {
    const now = input.now.getTime()
    return read(async () => {
      const r = await rows<
        DeliveryRow & {
          w_events: WebhookEvent[]
          url: string
          format: WebhookRecord['format']
          created_at: string
          created_by: string | null
          sealed_secret: Buffer | null
        }
      >(
        this.#db,
        sql`with due as (
              select id from webhook_deliveries
              where status = 'pending' and next_attempt_at <= ${now} and (claimed_until is null or claimed_until <= ${now})
              order by next_attempt_at, id limit ${Math.max(0, Math.trunc(input.limit))}
              for update skip locked
            ), claimed as (
              update webhook_deliveries d set claim_token = ${input.token}, claimed_until = ${now + input.leaseMs}
              from due where d.id = due.id
              returning d.*
            )
            select c.id, c.webhook_id, w.vault_id, c.push_id, c.event, c.occurred_at, c.status, c.attempts, c.next_attempt_at, c.last_attempt_at,
                   c.last_status, c.last_error, w.url, w.format, w.events as w_events, w.created_at, w.created_by, w.sealed_secret
            from claimed c join webhooks w on w.id = c.webhook_id
            order by c.next_attempt_at, c.id`,
      )
      return r.map((x) => ({
        ...deliveryOf(x),
        webhook: webhookOf({
          id: x.webhook_id,
          vault_id: x.vault_id,
          url: x.url,
          format: x.format,
          events: x.w_events,
          created_at: x.created_at,
          created_by: x.created_by,
        }),
        sealedSecret: x.sealed_secret && copy(x.sealed_secret),
      }))
    })
  }

  finishAttempt(a: DeliveryAttempt): Promise<boolean> {
    if (!/^[0-9]{1,18}$/.test(a.deliveryId)) return Promise.resolve(false)
    return read(async () => {
      const r = await sql`
        update webhook_deliveries set status = ${a.outcome === 'retry' ? 'pending' : a.outcome}, attempts = attempts + 1,
          next_attempt_at = ${a.outcome === 'retry' ? (a.nextAttemptAt?.getTime() ?? a.at.getTime()) : null},
          last_attempt_at = ${a.at.getTime()}, last_status = ${a.httpStatus}, last_error = ${a.error}, claim_token = null, claimed_until = null
        where id = ${a.deliveryId} and claim_token = ${a.claimToken}`.execute(this.#db)
      return Number(r.numAffectedRows ?? 0) > 0
    })
  }

  listDeliveries(vaultId: string, webhookId: string, limit: number): Promise<DeliveryRecord[]> {
    return read(async () =>
      (
        await rows<DeliveryRow>(
          this.#db,
          sql`select d.id, d.webhook_id, w.vault_id, d.push_id, d.event, d.occurred_at, d.status, d.attempts, d.next_attempt_at, d.last_attempt_at, d.last_status, d.last_error
              from webhook_deliveries d join webhooks w on w.id = d.webhook_id
              where w.vault_id = ${vaultId} and d.webhook_id = ${webhookId}
              order by d.occurred_at desc, d.id desc limit ${Math.max(0, Math.trunc(limit))}`,
        )
      ).map(deliveryOf),
    )
  }

  pruneDeliveries(olderThan: Date): Promise<number> {
    return read(async () => {
      const r = await sql`delete from webhook_deliveries where status <> 'pending' and occurred_at < ${olderThan.getTime()}`.execute(this.#db)
      return Number(r.numAffectedRows ?? 0)
    })
  }
}

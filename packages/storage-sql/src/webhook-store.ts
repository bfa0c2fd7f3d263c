import type { ClaimedDelivery, DeliveryRecord, WebhookEvent, WebhookRecord, WebhookStore } from '@envkeep/env-api-plugin'
import { type Selectable, sql } from 'kysely'
import type { SqlRunner } from './dialect.js'
import { all, run } from './op.js'
import { bytes, copyBytes, date, dateOrNull, fromJson, num, toJson } from './rows.js'
import type { WebhookDeliveriesTable, WebhooksTable } from './schema.js'

const EVENT_ORDER: readonly WebhookEvent[] = ['push.created', 'push.decided', 'push.expired']

type WebhookRow = Omit<Selectable<WebhooksTable>, 'sealed_secret'>
type DeliveryRow = Omit<Selectable<WebhookDeliveriesTable>, 'claim_token' | 'claimed_until'> & { vault_id: string }

function webhookOf(r: WebhookRow): WebhookRecord {
  const events = fromJson<WebhookEvent[]>(r.events)
  return {
    id: r.id,
    vaultId: r.vault_id,
    url: r.url,
    format: r.format,
    events: EVENT_ORDER.filter((e) => events.includes(e)),
    createdAt: date(r.created_at),
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
    occurredAt: date(r.occurred_at),
    status: r.status,
    attempts: num(r.attempts),
    nextAttemptAt: dateOrNull(r.next_attempt_at),
    lastAttemptAt: dateOrNull(r.last_attempt_at),
    lastStatus: r.last_status === null ? null : num(r.last_status),
    lastError: r.last_error,
  }
}

const limitOf = (n: number): number => Math.max(0, Math.trunc(n))

/**
 * Webhooks and their delivery outbox (webhook-store.ts in the plugin): tables webhooks and
 * webhook_deliveries. Enqueueing relies on the (webhook, push, event) unique constraint,
 * claiming on row locks that skip what another process holds (PostgreSQL) or on SQLite's one
 * writer, so several server processes on one database deliver each once.
 */
export function createWebhookStore(s: SqlRunner): WebhookStore {
  const d = s.dialect
  const { db } = d
  const deliveries = db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhooks as w', 'w.id', 'd.webhook_id')
    .select([
      'd.id',
      'd.webhook_id',
      'w.vault_id',
      'd.push_id',
      'd.event',
      'd.occurred_at',
      'd.status',
      'd.attempts',
      'd.next_attempt_at',
      'd.last_attempt_at',
      'd.last_status',
      'd.last_error',
    ])
  return {
    createWebhook: (w) =>
      s.write(function* () {
        const events = EVENT_ORDER.filter((e) => w.events.includes(e))
        const row = {
          id: w.id,
          vault_id: w.vaultId,
          url: w.url,
          format: w.format,
          events: toJson(events),
          sealed_secret: w.sealedSecret && bytes(w.sealedSecret),
          created_at: w.createdAt.getTime(),
          created_by: w.createdBy,
        }
        yield* run(db.insertInto('webhooks').values(row))
        return webhookOf(row)
      }),

    listWebhooks: (vaultId) =>
      s.read(function* () {
        const rows = yield* all(db.selectFrom('webhooks').selectAll().where('vault_id', '=', vaultId).orderBy('created_at').orderBy(d.byBytes('id')))
        return rows.map((r) => ({ ...webhookOf(r), sealedSecret: r.sealed_secret && copyBytes(r.sealed_secret) }))
      }),

    sealWebhookUrl: (input) =>
      s.write(function* () {
        const n = yield* run(
          db
            .updateTable('webhooks')
            .set({ url: input.url, sealed_secret: bytes(input.sealedSecret) })
            .where('id', '=', input.webhookId)
            .where('vault_id', '=', input.vaultId)
            .where('url', '=', input.ifUrl),
        )
        return n > 0
      }),

    // the deliveries go by the foreign key's cascade
    deleteWebhook: (vaultId, webhookId) =>
      s.write(function* () {
        return (yield* run(db.deleteFrom('webhooks').where('id', '=', webhookId).where('vault_id', '=', vaultId))) > 0
      }),

    enqueueDeliveries: (input) =>
      s.write(function* () {
        const since = input.since.getTime()
        const onePush = input.pushId === undefined ? sql`` : sql`and id = ${input.pushId}`
        // `events` is JSON text (SQLite) or jsonb (PostgreSQL): as text, both hold each event quoted
        const insert = sql`
          insert into webhook_deliveries (webhook_id, push_id, event, occurred_at, status, attempts, next_attempt_at)
          select w.id, e.push_id, e.event, e.at, 'pending', 0, ${input.now.getTime()}
          from (
            select id as push_id, vault_id, 'push.created' as event, created_at as at from imports where created_at >= ${since} ${onePush}
            union all
            select id, vault_id, 'push.decided', decided_at from imports where status in ('applied', 'rejected') and decided_at >= ${since} ${onePush}
            union all
            select id, vault_id, 'push.expired', decided_at from imports where status = 'expired' and decided_at >= ${since} ${onePush}
          ) e
          join webhooks w on w.vault_id = e.vault_id and e.at >= w.created_at
          where cast(w.events as text) like '%"' || e.event || '"%'
          on conflict (webhook_id, push_id, event) do nothing`
        return yield* run({ compile: () => insert.compile(db) })
      }),

    claimDeliveries: (input) =>
      s.write(function* () {
        const now = input.now.getTime()
        const due = yield* all(
          db
            .selectFrom('webhook_deliveries')
            .select('id')
            .where('status', '=', 'pending')
            .where('next_attempt_at', '<=', now)
            .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<=', now)]))
            .orderBy('next_attempt_at')
            .orderBy('id')
            .limit(limitOf(input.limit))
            .$if(d.rowLocks, (q) => q.forUpdate().skipLocked()),
        )
        if (due.length === 0) return []
        const ids = due.map((r) => r.id)
        yield* run(
          db
            .updateTable('webhook_deliveries')
            .set({ claim_token: input.token, claimed_until: now + input.leaseMs })
            .where('id', 'in', ids),
        )
        const rows = yield* all(
          deliveries
            .select(['w.url', 'w.format', 'w.events', 'w.created_at', 'w.created_by', 'w.sealed_secret'])
            .where('d.id', 'in', ids)
            .orderBy('d.next_attempt_at')
            .orderBy('d.id'),
        )
        return rows.map(
          (r): ClaimedDelivery => ({
            ...deliveryOf(r),
            webhook: webhookOf({ ...r, id: r.webhook_id }),
            sealedSecret: r.sealed_secret && copyBytes(r.sealed_secret),
          }),
        )
      }),

    finishAttempt: (a) => {
      // a delivery id is an integer (SQLite integer, PostgreSQL bigint): anything else is no delivery
      if (!/^[0-9]{1,15}$/.test(a.deliveryId)) return Promise.resolve(false)
      return s.write(function* () {
        const n = yield* run(
          db
            .updateTable('webhook_deliveries')
            .set((eb) => ({
              status: a.outcome === 'retry' ? 'pending' : a.outcome,
              attempts: eb('attempts', '+', 1),
              next_attempt_at: a.outcome === 'retry' ? (a.nextAttemptAt?.getTime() ?? a.at.getTime()) : null,
              last_attempt_at: a.at.getTime(),
              last_status: a.httpStatus,
              last_error: a.error,
              claim_token: null,
              claimed_until: null,
            }))
            .where('id', '=', Number(a.deliveryId))
            .where('claim_token', '=', a.claimToken),
        )
        return n > 0
      })
    },

    listDeliveries: (vaultId, webhookId, limit) =>
      s.read(function* () {
        const rows = yield* all(
          deliveries
            .where('w.vault_id', '=', vaultId)
            .where('d.webhook_id', '=', webhookId)
            .orderBy('d.occurred_at', 'desc')
            .orderBy('d.id', 'desc')
            .limit(limitOf(limit)),
        )
        return rows.map(deliveryOf)
      }),

    pruneDeliveries: (olderThan) =>
      s.write(() => run(db.deleteFrom('webhook_deliveries').where('status', '<>', 'pending').where('occurred_at', '<', olderThan.getTime()))),
  }
}

import type {
  AccessLogEntry,
  ChangeResult,
  ClaimedDelivery,
  DeliveryRecord,
  WebhookChange,
  WebhookEvent,
  WebhookRecord,
  WebhookStore,
} from '@envkeep/env-api-plugin'
import { type Selectable, sql } from 'kysely'
import { insertLog } from './access-log.js'
import { lockVault } from './vault-lock.js'
import { fixedQuery, raw } from './fixed-query.js'
import type { SqlDialect, SqlRunner } from './dialect.js'
import { all, first, run, type Step } from './op.js'
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
 * The deliveries a push's events call for, inserted where missing (every push since `since`,
 * or the one push): compiled once per dialect and form (a push enqueues its own).
 * `events` is JSON text (SQLite) or jsonb (PostgreSQL): as text, both hold each event quoted.
 */
const enqueueOf = (onePush: boolean) =>
  fixedQuery<unknown[], unknown>((d, arg) => {
    const only = onePush ? sql`and id = ${arg(2)}` : sql``
    return raw(
      d,
      sql`
        insert into webhook_deliveries (webhook_id, push_id, event, occurred_at, status, attempts, next_attempt_at)
        select w.id, e.push_id, e.event, e.at, 'pending', 0, ${arg(0)}
        from (
          select id as push_id, vault_id, 'push.created' as event, created_at as at from imports where created_at >= ${arg(1)} ${only}
          union all
          select id, vault_id, 'push.decided', decided_at from imports where status in ('applied', 'rejected') and decided_at >= ${arg(1)} ${only}
          union all
          select id, vault_id, 'push.expired', decided_at from imports where status = 'expired' and decided_at >= ${arg(1)} ${only}
        ) e
        join webhooks w on w.vault_id = e.vault_id and e.at >= w.created_at
        where cast(w.events as text) like '%"' || e.event || '"%'
        on conflict (webhook_id, push_id, event) do nothing`,
    )
  })
const enqueueAll = enqueueOf(false)
const enqueueOne = enqueueOf(true)

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
    changeWebhook: (change, log) => s.write(() => changeWebhook(d, change, log)),

    listWebhooks: (vaultId, recent) =>
      s.read(function* () {
        const rows = yield* all(
          db
            .selectFrom('webhooks')
            .selectAll()
            .$if(vaultId !== null, (q) => q.where('vault_id', '=', vaultId ?? ''))
            .orderBy('created_at')
            .orderBy(d.byBytes('id')),
        )
        const out: WebhookRecord[] = []
        for (const r of rows) {
          const w: WebhookRecord = { ...webhookOf(r), sealedSecret: r.sealed_secret && copyBytes(r.sealed_secret) }
          if (recent === undefined) out.push(w)
          else {
            const latest = yield* all(
              deliveries.where('d.webhook_id', '=', r.id).orderBy('d.occurred_at', 'desc').orderBy('d.id', 'desc').limit(limitOf(recent)),
            )
            out.push({ ...w, recent: latest.map(deliveryOf) })
          }
        }
        return out
      }),

    // one statement, atomic by itself (the unique (webhook, push, event) decides): no BEGIN and
    // COMMIT on PostgreSQL; on SQLite it is group-committed and synced like every write
    enqueueDeliveries: (input) =>
      s.write(
        function* () {
          const q =
            input.pushId === undefined
              ? enqueueAll(d, input.now.getTime(), input.since.getTime())
              : enqueueOne(d, input.now.getTime(), input.since.getTime(), input.pushId)
          return { ok: true as const, value: yield* run(q) }
        },
        { oneStatement: true },
      ),

    // The claim is one statement, atomic by itself (PostgreSQL: the due rows are locked, and
    // rows another process holds skipped), run without BEGIN and COMMIT there: a worker that
    // finds nothing due costs one round trip per tick. On SQLite it is synced like every write.
    // The claimed deliveries are then read as any read (their rows are this worker's now).
    claimDeliveries: async (input) => {
      const now = input.now.getTime()
      const claimed = await s.write(
        function* () {
          const due = db
            .selectFrom('webhook_deliveries')
            .select('id')
            .where('status', '=', 'pending')
            .where('next_attempt_at', '<=', now)
            .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<=', now)]))
            .orderBy('next_attempt_at')
            .orderBy('id')
            .limit(limitOf(input.limit))
            .$if(d.rowLocks, (q) => q.forUpdate().skipLocked())
          return yield* all(
            db
              .updateTable('webhook_deliveries')
              .set({ claim_token: input.token, claimed_until: now + input.leaseMs })
              .where('id', 'in', due)
              .returning('id'),
          )
        },
        { oneStatement: true },
      )
      if (claimed.length === 0) return { ok: true as const, value: [] }
      const rows = await s.read(function* () {
        return yield* all(
          deliveries
            .select(['w.url', 'w.format', 'w.events', 'w.created_at', 'w.created_by', 'w.sealed_secret'])
            .where(
              'd.id',
              'in',
              claimed.map((r) => r.id),
            )
            .orderBy('d.next_attempt_at')
            .orderBy('d.id'),
        )
      })
      const value = rows.map(
        (r): ClaimedDelivery => ({
          ...deliveryOf(r),
          webhook: webhookOf({ ...r, id: r.webhook_id }),
          sealedSecret: r.sealed_secret && copyBytes(r.sealed_secret),
        }),
      )
      return { ok: true as const, value }
    },

    finishAttempt: (a) => {
      // a delivery id is an integer (SQLite integer, PostgreSQL bigint): anything else is no delivery
      if (!/^[0-9]{1,15}$/.test(a.deliveryId)) return Promise.resolve({ ok: false, reason: 'not_found' })
      return s.write(function* (): Generator<Step, ChangeResult<'not_found'>, unknown> {
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
        return n > 0 ? { ok: true, value: undefined } : { ok: false, reason: 'not_found' }
      })
    },
  }
}

function* changeWebhook(
  d: SqlDialect,
  change: WebhookChange,
  log: AccessLogEntry | undefined,
): Generator<Step, ChangeResult<'not_found' | 'too_many', WebhookRecord>, unknown> {
  const { db } = d
  let done: WebhookRecord
  if (change.kind === 'create') {
    const w = change.webhook
    // two additions cannot both pass the count
    if (!(yield* lockVault(d, w.vaultId))) return { ok: false, reason: 'not_found' }
    const has = yield* first(
      db
        .selectFrom('webhooks')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('vault_id', '=', w.vaultId),
    )
    if (num(has?.n ?? 0) >= change.most) return { ok: false, reason: 'too_many' }
    const row = {
      id: w.id,
      vault_id: w.vaultId,
      url: w.url,
      format: w.format,
      events: toJson(EVENT_ORDER.filter((e) => w.events.includes(e))),
      sealed_secret: w.sealedSecret && bytes(w.sealedSecret),
      created_at: w.createdAt.getTime(),
      created_by: w.createdBy,
    }
    yield* run(db.insertInto('webhooks').values(row))
    done = webhookOf(row)
  } else if (change.kind === 'seal') {
    const [row] = yield* all(
      db
        .updateTable('webhooks')
        .set({ url: change.url, sealed_secret: bytes(change.sealedSecret) })
        .where('id', '=', change.webhookId)
        .where('vault_id', '=', change.vaultId)
        .where('url', '=', change.ifUrl)
        .returningAll(),
    )
    if (!row) return { ok: false, reason: 'not_found' }
    done = webhookOf(row)
  } else {
    // the deliveries go by the foreign key's cascade
    const [row] = yield* all(db.deleteFrom('webhooks').where('id', '=', change.webhookId).where('vault_id', '=', change.vaultId).returningAll())
    if (!row) return { ok: false, reason: 'not_found' }
    done = webhookOf(row)
  }
  if (log) yield* insertLog(d, log)
  return { ok: true, value: done }
}

import type { ChangeResult } from '../adapters/results.js'
import type { AccessLogEntry, ImportRecord } from '../adapters/storage.js'
import type { ClaimedDelivery, DeliveryAttempt, DeliveryRecord, WebhookChange, WebhookEvent, WebhookRecord, WebhookStore } from '../adapters/webhook-store.js'
import { StorageError } from '../errors.js'
import { copyBytes, type DeliveryRow, type MemoryDb, type WebhookRow, webhooksOf } from './memory-state.js'

const EVENT_ORDER: readonly WebhookEvent[] = ['push.created', 'push.decided', 'push.expired']

function record(w: WebhookRow): WebhookRecord {
  return {
    id: w.id,
    vaultId: w.vaultId,
    url: w.url,
    format: w.format,
    events: [...w.events],
    createdAt: new Date(w.createdAt),
    createdBy: w.createdBy,
    sealedSecret: w.sealedSecret && copyBytes(w.sealedSecret),
  }
}

function delivery(r: DeliveryRow): DeliveryRecord {
  return {
    id: r.id,
    webhookId: r.webhookId,
    vaultId: r.vaultId,
    pushId: r.pushId,
    event: r.event,
    occurredAt: new Date(r.occurredAt),
    status: r.status,
    attempts: r.attempts,
    nextAttemptAt: r.nextAttemptAt && new Date(r.nextAttemptAt),
    lastAttemptAt: r.lastAttemptAt && new Date(r.lastAttemptAt),
    lastStatus: r.lastStatus,
    lastError: r.lastError,
  }
}

/** The events that happened to a push, with when. */
export function eventsOf(i: ImportRecord): { event: WebhookEvent; at: Date }[] {
  const out: { event: WebhookEvent; at: Date }[] = [{ event: 'push.created', at: i.createdAt }]
  if ((i.status === 'applied' || i.status === 'rejected') && i.decidedAt) out.push({ event: 'push.decided', at: i.decidedAt })
  if (i.status === 'expired' && i.decidedAt) out.push({ event: 'push.expired', at: i.decidedAt })
  return out
}

/** The reference webhook store (webhook-store.ts), on the memory state. */
export class MemoryWebhookStore implements WebhookStore {
  readonly #db: MemoryDb

  constructor(db: MemoryDb) {
    this.#db = db
  }

  changeWebhook(change: WebhookChange, log?: AccessLogEntry): Promise<ChangeResult<'not_found' | 'too_many', WebhookRecord>> {
    return this.#db.write('webhooks', (s): ChangeResult<'not_found' | 'too_many', WebhookRecord> => {
      let done: WebhookRecord
      if (change.kind === 'create') {
        const w = change.webhook
        if (!s.vaults.has(w.vaultId)) return { ok: false, reason: 'not_found' }
        if (s.webhooks.has(w.id)) throw new StorageError('23505', 'webhooks_pk')
        if (webhooksOf(s, w.vaultId).length >= change.most) return { ok: false, reason: 'too_many' }
        const row: WebhookRow = Object.freeze({
          id: w.id,
          vaultId: w.vaultId,
          url: w.url,
          format: w.format,
          events: Object.freeze(EVENT_ORDER.filter((e) => w.events.includes(e))),
          createdAt: w.createdAt,
          createdBy: w.createdBy,
          sealedSecret: w.sealedSecret && copyBytes(w.sealedSecret),
        })
        s.webhooks.set(w.id, row)
        done = record(row)
      } else {
        const w = s.webhooks.get(change.webhookId)
        if (!w || w.vaultId !== change.vaultId) return { ok: false, reason: 'not_found' }
        if (change.kind === 'seal') {
          if (w.url !== change.ifUrl) return { ok: false, reason: 'not_found' }
          const row = Object.freeze({ ...w, url: change.url, sealedSecret: copyBytes(change.sealedSecret) })
          s.webhooks.set(w.id, row)
          done = record(row)
        } else {
          s.webhooks.delete(w.id)
          for (const [id, d] of s.deliveries) if (d.webhookId === w.id) s.deliveries.delete(id)
          done = record(w)
        }
      }
      if (log) this.#db.appendLog(s, log)
      return { ok: true, value: done }
    })
  }

  listWebhooks(vaultId: string | null, deliveries?: number): Promise<WebhookRecord[]> {
    return this.#db.read('webhooks', (s) =>
      (vaultId === null ? [...s.webhooks.values()] : webhooksOf(s, vaultId))
        .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime())
        .map((w) => {
          if (deliveries === undefined) return record(w)
          const recent = [...s.deliveries.values()]
            .filter((d) => d.webhookId === w.id)
            .sort((a, b) => b.occurredAt.getTime() - a.occurredAt.getTime() || Number(b.id) - Number(a.id))
            .slice(0, Math.max(0, Math.trunc(deliveries)))
            .map(delivery)
          return { ...record(w), recent }
        }),
    )
  }

  enqueueDeliveries(input: { now: Date; since: Date; pushId?: string }): Promise<ChangeResult<never, number>> {
    return this.#db.write('webhook_deliveries', async (s): Promise<ChangeResult<never, number>> => {
      const imports = input.pushId === undefined ? [...s.imports.values()] : [s.imports.get(input.pushId)].filter((i) => i !== undefined)
      const have = new Set([...s.deliveries.values()].map((d) => `${d.webhookId}\0${d.pushId}\0${d.event}`))
      await this.#db.step()
      let n = 0
      for (const i of imports) {
        if (!s.vaults.has(i.vaultId)) continue
        for (const { event, at } of eventsOf(i)) {
          if (at.getTime() < input.since.getTime()) continue
          for (const w of s.webhooks.values()) {
            if (w.vaultId !== i.vaultId || !w.events.includes(event) || at.getTime() < w.createdAt.getTime()) continue
            const key = `${w.id}\0${i.id}\0${event}`
            if (have.has(key)) continue
            have.add(key)
            const id = String(s.nextDeliveryId++)
            s.deliveries.set(
              id,
              Object.freeze({
                id,
                webhookId: w.id,
                vaultId: w.vaultId,
                pushId: i.id,
                event,
                occurredAt: at,
                status: 'pending',
                attempts: 0,
                nextAttemptAt: input.now,
                lastAttemptAt: null,
                lastStatus: null,
                lastError: null,
                claimToken: null,
                claimedUntil: null,
              }),
            )
            n++
          }
        }
      }
      return { ok: true, value: n }
    })
  }

  claimDeliveries(input: { now: Date; leaseMs: number; limit: number; token: string }): Promise<ChangeResult<never, ClaimedDelivery[]>> {
    return this.#db.write('webhook_deliveries', async (s): Promise<ChangeResult<never, ClaimedDelivery[]>> => {
      const now = input.now.getTime()
      const due = [...s.deliveries.values()]
        .filter(
          (d) => d.status === 'pending' && d.nextAttemptAt !== null && d.nextAttemptAt.getTime() <= now && (d.claimedUntil === null || d.claimedUntil <= now),
        )
        .sort((a, b) => (a.nextAttemptAt?.getTime() ?? 0) - (b.nextAttemptAt?.getTime() ?? 0) || Number(a.id) - Number(b.id))
        .slice(0, Math.max(0, Math.trunc(input.limit)))
      await this.#db.step()
      const value = due.map((d) => {
        const claimed = Object.freeze({ ...d, claimToken: input.token, claimedUntil: now + input.leaseMs })
        s.deliveries.set(d.id, claimed)
        const w = s.webhooks.get(d.webhookId) as WebhookRow
        return { ...delivery(claimed), webhook: record(w), sealedSecret: w.sealedSecret && copyBytes(w.sealedSecret) }
      })
      return { ok: true, value }
    })
  }

  finishAttempt(a: DeliveryAttempt): Promise<ChangeResult<'not_found'>> {
    return this.#db.write('webhook_deliveries', (s): ChangeResult<'not_found'> => {
      const d = s.deliveries.get(a.deliveryId)
      if (!d || d.claimToken !== a.claimToken) return { ok: false, reason: 'not_found' }
      s.deliveries.set(
        d.id,
        Object.freeze({
          ...d,
          status: a.outcome === 'retry' ? 'pending' : a.outcome,
          attempts: d.attempts + 1,
          nextAttemptAt: a.outcome === 'retry' ? a.nextAttemptAt : null,
          lastAttemptAt: a.at,
          lastStatus: a.httpStatus,
          lastError: a.error,
          claimToken: null,
          claimedUntil: null,
        }),
      )
      return { ok: true, value: undefined }
    })
  }
}

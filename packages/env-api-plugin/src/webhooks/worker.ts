import { randomUUID } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import type { PeopleAdapter } from '../adapters/people.js'
import type { ClaimedDelivery, DeliveryAttempt } from '../adapters/webhook-store.js'
import type { Domain } from '../domain/index.js'
import type { ResolveHost } from '../domain/webhook-url.js'
import type { ResolvedOptions } from '../options.js'
import { genericBody, signatureOf, slackBody, type PushEventFacts } from './payload.js'
import { sendWebhook, type SendOutcome } from './send.js'
import { reviewUrl } from '../review-path.js'

/**
 * The delivery worker: claims due deliveries (each by one process, for
 * `LEASE_MS`), sends them, records each attempt. A failed attempt is tried
 * again after `RETRY_DELAYS_MS` (exponential: 30 s, 2, 8 and 20 minutes,
 * five attempts over about half an hour), then the delivery is `failed`.
 * Logs say which webhook, delivery, event and outcome; never the URL, the
 * secret or a body.
 */

export const MAX_ATTEMPTS = 5
export const RETRY_DELAYS_MS: readonly number[] = Object.freeze([30_000, 120_000, 480_000, 1_200_000])
export const DELIVERY_TIMEOUT_MS = 5_000
const LEASE_MS = 60_000
const BATCH = 10
const SWEEP_EVERY_MS = 60_000
const SWEEP_WINDOW_MS = 86_400_000

export interface WorkerLog {
  info(o: object, msg: string): void
  warn(o: object, msg: string): void
  error(o: object, msg: string): void
}

export interface WebhookWorkerDeps {
  /** the core's domain (createEnvkeepCore): the deliveries' rows and the webhooks' keys */
  readonly domain: Pick<Domain, 'claimWebhookDeliveries' | 'webhookDeliveryFacts' | 'finishWebhookDelivery' | 'sweepWebhookDeliveries' | 'sealLegacyWebhooks'>
  readonly people: Pick<PeopleAdapter, 'getPerson'>
  readonly baseUrl: string
  readonly now: () => Date
  readonly allowPrivate: boolean
  readonly log: WorkerLog
  readonly timeoutMs?: number
  readonly resolveHost?: ResolveHost
  /** told how each attempt ended (metrics) */
  readonly onAttempt?: (outcome: DeliveryAttempt['outcome']) => void
}

/** What to send for a claimed delivery, or why it cannot be sent. */
async function prepare(
  deps: WebhookWorkerDeps,
  d: ClaimedDelivery,
): Promise<{ url: string; body: string; headers: Record<string, string> } | { error: string }> {
  const facts0 = await deps.domain.webhookDeliveryFacts(d)
  if ('error' in facts0) return facts0
  const { push, vault, credentials } = facts0
  const whoId = d.event === 'push.created' ? push.senderId : d.event === 'push.decided' ? push.decidedBy : null
  let whoName: string | null = null
  if (whoId) whoName = (await deps.people.getPerson(whoId).catch(() => null))?.name ?? null
  const facts: PushEventFacts = {
    event: d.event,
    deliveryId: d.id,
    vault: { id: vault.id, name: vault.name },
    push,
    who: whoId ? { id: whoId, name: whoName } : null,
    reviewUrl: reviewUrl(deps.baseUrl, vault.id, push.id),
    time: d.occurredAt,
  }
  const headers: Record<string, string> = {
    'user-agent': 'envkeep-webhooks',
    'x-envkeep-event': d.event,
    'x-envkeep-delivery': d.id,
  }
  const { url, secret } = credentials
  if (d.webhook.format === 'slack') return { url, body: slackBody(facts), headers }
  if (!secret) return { error: 'the webhook has no signing secret' }
  const body = genericBody(facts)
  const timestamp = String(Math.floor(deps.now().getTime() / 1000))
  return { url, body, headers: { ...headers, 'x-envkeep-signature': signatureOf(secret, timestamp, body), 'x-envkeep-timestamp': timestamp } }
}

async function attempt(deps: WebhookWorkerDeps, d: ClaimedDelivery, token: string): Promise<DeliveryAttempt['outcome']> {
  let outcome: SendOutcome
  try {
    const ready = await prepare(deps, d)
    outcome =
      'error' in ready
        ? { ok: false, status: null, error: ready.error }
        : await sendWebhook({
            url: ready.url,
            body: ready.body,
            headers: ready.headers,
            timeoutMs: deps.timeoutMs ?? DELIVERY_TIMEOUT_MS,
            allowPrivate: deps.allowPrivate,
            resolveHost: deps.resolveHost,
          })
  } catch {
    outcome = { ok: false, status: null, error: 'the delivery could not be prepared' }
  }
  const at = deps.now()
  const attempts = d.attempts + 1
  const result: DeliveryAttempt['outcome'] = outcome.ok ? 'delivered' : attempts >= MAX_ATTEMPTS ? 'failed' : 'retry'
  const delay = RETRY_DELAYS_MS[Math.min(attempts, RETRY_DELAYS_MS.length) - 1] as number
  await deps.domain.finishWebhookDelivery({
    deliveryId: d.id,
    claimToken: token,
    at,
    httpStatus: outcome.status,
    error: outcome.ok ? null : outcome.error,
    outcome: result,
    nextAttemptAt: result === 'retry' ? new Date(at.getTime() + delay) : null,
  })
  deps.onAttempt?.(result)
  const facts = { webhook: d.webhook.id, delivery: d.id, event: d.event, attempt: attempts, status: outcome.status }
  if (outcome.ok) deps.log.info(facts, 'webhook delivered')
  else deps.log.warn({ ...facts, error: outcome.error, outcome: result }, 'webhook delivery failed')
  return result
}

/** Claims and sends the deliveries due now, a batch at a time; returns how each ended. */
export async function deliverDueWebhooks(deps: WebhookWorkerDeps): Promise<{ delivered: number; retry: number; failed: number }> {
  const counts = { delivered: 0, retry: 0, failed: 0 }
  const token = randomUUID()
  const claimed = await deps.domain.claimWebhookDeliveries({ leaseMs: LEASE_MS, limit: BATCH, token })
  for (const r of await Promise.all(claimed.map((d) => attempt(deps, d, token)))) counts[r]++
  return counts
}

/** Enqueues the deliveries of recent push events not enqueued yet (expiries, and any missed after a crash). */
export function sweepWebhookEvents(deps: { readonly domain: Pick<Domain, 'sweepWebhookDeliveries'> }): Promise<number> {
  return deps.domain.sweepWebhookDeliveries(SWEEP_WINDOW_MS)
}

/**
 * Runs the worker in the plugin: every `webhookIntervalMs` a batch is
 * delivered; every minute the sweep runs (deliveries older than 30 days
 * go with housekeeping's hourly purge). One run at a time; the timer never keeps the
 * process alive and stops when the app closes (after the run under way).
 */
export function scheduleWebhookDeliveries(app: FastifyInstance, opts: ResolvedOptions): void {
  const deps: WebhookWorkerDeps = {
    domain: opts.core.domain, // the core's: one data-key cache per plugin instance
    people: opts.people,
    baseUrl: opts.baseUrl,
    now: opts.now,
    allowPrivate: opts.allowPrivateWebhooks,
    log: app.log,
    onAttempt: opts.observer.webhookDelivery,
  }
  let timer: NodeJS.Timeout | undefined
  let running: Promise<void> | null = null
  let lastSweep = 0

  let legacySealed = false

  async function run(): Promise<void> {
    try {
      if (!legacySealed && opts.keyring) {
        // URLs stored plain before issue 25 are sealed once, on the first run with the key
        const n = await deps.domain.sealLegacyWebhooks()
        legacySealed = true
        if (n > 0) app.log.info({ webhooks: n }, 'envkeep sealed the URLs of webhooks stored before they were sealed')
      }
      if (Date.now() - lastSweep >= SWEEP_EVERY_MS) {
        lastSweep = Date.now()
        await sweepWebhookEvents(deps)
      }
      for (let i = 0; i < 10; i++) {
        const c = await deliverDueWebhooks(deps)
        if (c.delivered + c.retry + c.failed < BATCH) break
      }
    } catch (err) {
      app.log.error({ where: 'database', kind: err instanceof Error ? err.name : typeof err }, 'envkeep webhook deliveries failed')
    }
  }

  function tick(): void {
    if (running) return
    running = run().finally(() => (running = null))
  }

  app.addHook('onReady', async function startWebhookDeliveries() {
    timer = setInterval(tick, opts.webhookIntervalMs)
    timer.unref()
  })
  app.addHook('onClose', async function stopWebhookDeliveries() {
    if (timer) clearInterval(timer)
    await running
  })
}

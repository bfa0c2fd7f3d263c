import type { FastifyInstance } from 'fastify'
import type { ResolvedOptions } from './options.js'
import { sweepWebhookEvents } from './webhooks/worker.js'

const MINUTE = 60_000

/**
 * The plugin's periodic work, so that every host gets it, not only the
 * self-hosting server: pending pushes past their end become `expired`
 * (decisions.md: on every read of the push and by a periodic sweep), every
 * `expiryIntervalMs` (5 s) from start, and their `push.expired` deliveries
 * are enqueued in the same run (issue 25: they came up to two minutes
 * late, a minute for the sweep and another for the webhook sweep); expired OAuth codes (kept a day, so a late replay still
 * revokes), expired access tokens and sign-ins ended more than 30 days ago
 * are purged hourly when the store can, and so are versions kept in history
 * past `historyDays` (each variable's last 10 stay). One run at a time; the timer never
 * keeps the process alive and stops when the app closes.
 */
export function scheduleHousekeeping(app: FastifyInstance, opts: ResolvedOptions): void {
  let timer: NodeJS.Timeout | undefined
  let running: Promise<void> | null = null
  let runs = 0

  let lastMinutely = Number.NEGATIVE_INFINITY

  async function housekeeping(): Promise<void> {
    const { domain } = opts.core
    try {
      const expired = await domain.expirePushes()
      if (expired > 0) {
        app.log.info({ expired }, 'expired pending pushes')
        await sweepWebhookEvents({ domain })
      }
      // the rest once a minute (real time: the timer's, not the injected clock)
      if (Date.now() - lastMinutely < MINUTE) return
      lastMinutely = Date.now()
      if (runs++ % 60 === 0) {
        const removed = await domain.purgeSignIns()
        app.log.debug({ removed }, 'envkeep OAuth purge')
        // retention: versions older than historyDays, beyond each variable's last 10
        const pruned = await domain.pruneHistory()
        if (pruned > 0) app.log.info({ pruned }, 'pruned history past its retention')
      }
    } catch (err) {
      app.log.error({ where: 'database', kind: err instanceof Error ? err.name : typeof err }, 'envkeep housekeeping failed')
    }
  }

  function tick(): void {
    if (running) return
    running = housekeeping().finally(() => (running = null))
  }

  app.addHook('onReady', async function startHousekeeping() {
    tick()
    timer = setInterval(tick, opts.expiryIntervalMs)
    timer.unref()
  })
  app.addHook('onClose', async function stopHousekeeping() {
    if (timer) clearInterval(timer)
    await running
  })
}

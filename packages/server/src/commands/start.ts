import { existsSync } from 'node:fs'
import type { Server } from 'node:http'
import type { DestinationStream } from 'pino'
import { openStores } from '../stores.js'
import { buildApp } from '../build-app.js'
import { createLogger } from '../logger.js'
import { loadKeySource } from '../keyring-file.js'
import { hashToken, newToken } from '../secrets.js'
import { BACKUP_WARNING, initDataDir } from './init.js'
import { CommandFailure, EXIT_OK, type CommandContext } from './context.js'
import { SETTINGS, UsageError } from '../config.js'
import { disableCoreDumps } from '../ops/core-dumps.js'
import { createMetrics, serveMetrics } from '../ops/metrics.js'
import { createAuditStream, type AuditStream } from '../ops/audit-stream.js'
import { databaseOf } from '../ops/health.js'
import { effectiveSettings, resolveFileSettings, unknownSettings } from '../ops/settings.js'

/** How long a printed setup link works. */
export const SETUP_LINK_TTL_MS = 24 * 60 * 60 * 1000
/** How often pending pushes past their end are expired and old sessions removed. */
export const SWEEP_INTERVAL_MS = 60 * 1000

function processSignals(handler: (signal: string) => void): () => void {
  process.on('SIGTERM', handler)
  process.on('SIGINT', handler)
  return () => {
    process.off('SIGTERM', handler)
    process.off('SIGINT', handler)
  }
}

/**
 * Serves until SIGTERM or SIGINT, then closes gracefully: stops accepting,
 * lets in-flight requests finish, closes the database. On a data directory
 * that does not exist yet it runs `init` first (first run: this is the one
 * time `start` makes a key); on an existing one it never makes a key.
 */
export async function startCommand(ctx: CommandContext): Promise<number> {
  const { config, deps, now } = ctx
  const log = createLogger(config.logLevel, deps.stdout as unknown as DestinationStream)
  // before any key is read: no core file, and no memory in one, should the process crash
  const core = disableCoreDumps()
  ;(core.limit === '0/0' ? log.info : log.warn).call(log, { coreLimit: core.limit, coredumpFilter: core.filterCleared ? 0 : 'unchanged' }, core.summary)
  const known = SETTINGS.map((s) => s.env)
  for (const warning of unknownSettings(deps.env, known)) log.warn(warning)
  log.info(
    {
      settings: effectiveSettings(
        deps.env,
        resolveFileSettings(deps.env, deps.cwd, (m) => new UsageError(m)),
        known,
      ),
    },
    'settings in effect (secrets redacted; the rest are defaults, see --help)',
  )

  if (!existsSync(config.dataDir)) {
    const r = await initDataDir(config)
    log.info({ dataDir: config.dataDir }, 'first run: data directory created (as `envkeep-server init` does)')
    if (r.createdKey) log.warn({ keyFile: r.keyFile }, `master key created; ${BACKUP_WARNING}`)
  }
  const source = loadKeySource(config)
  if (source.kind === 'none')
    log.warn(
      { keyFile: source.path },
      'no master key: routes that read or write values answer 503 not_configured; set ENVKEEP_MASTER_KEY or ENVKEEP_MASTER_KEY_FILE',
    )
  else if (source.kind === 'file' && source.tooOpen) log.warn({ keyFile: source.path }, 'the master key file can be read by other users; run chmod 600 on it')

  let stopping = false
  const stores = await openStores(config)
  const { accounts } = stores
  const metrics = config.metricsAddress ? createMetrics({ storage: stores.storage, now }) : undefined
  const storage = metrics ? metrics.timeStorage(stores.storage) : stores.storage
  let app!: Awaited<ReturnType<typeof buildApp>>['app']
  let metricsServer: Server | null = null
  try {
    ;({ app } = await buildApp({
      config,
      storage,
      ...(metrics ? { metrics } : {}),
      accounts,
      keyring: source.kind === 'none' ? null : source.keyring,
      logger: log,
      now,
      isShuttingDown: () => stopping,
    }))
    await app.listen({ host: config.host, port: config.port })
    if (metrics && config.metricsAddress) {
      metricsServer = await serveMetrics(metrics.registry, config.metricsAddress).catch((err: unknown) => {
        const code = (err as NodeJS.ErrnoException).code
        throw new CommandFailure(`cannot listen for metrics on ${config.metricsAddress!.host}:${config.metricsAddress!.port} (${code})`, { cause: err })
      })
      log.info(
        {
          metrics: `http://${config.metricsAddress.host.includes(':') ? `[${config.metricsAddress.host}]` : config.metricsAddress.host}:${config.metricsAddress.port}/metrics`,
        },
        'metrics served on their own listener',
      )
    }
  } catch (err) {
    // the metrics listener failed after the app listened: close the app first
    await (app as typeof app | undefined)?.close().catch(() => {})
    await stores.close()
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'EADDRINUSE' || code === 'EACCES' || code === 'EADDRNOTAVAIL')
      throw new CommandFailure(`cannot listen on ${config.host}:${config.port} (${code})`, { cause: err })
    throw err
  }
  let audit: AuditStream | null = null
  const database = databaseOf(stores.storage)
  if (config.auditStream && database) {
    audit = createAuditStream({
      db: database.db,
      kind: database.kind,
      sink: config.auditStream,
      log,
      ...(metrics ? { onSent: metrics.auditStream.sent, onFailed: metrics.auditStream.failed } : {}),
    })
    await audit.start()
    log.info({ auditStream: config.auditStream.kind }, 'audit stream on: every access-log entry and server audit event is sent')
  }
  // SIGHUP: logrotate moved the audit file; never the default (which would end the process)
  const onHangup = () => {
    audit?.reopen()
    log.info('SIGHUP: the audit stream file is opened again on its next write')
  }
  process.on('SIGHUP', onHangup)
  if ((await accounts.countAccounts()) === 0) {
    // Only the hash is stored; the link goes to the terminal (stderr), never to the log.
    const token = newToken()
    const at = now()
    await accounts.replaceSetupToken(hashToken(token), at, new Date(at.getTime() + SETUP_LINK_TTL_MS))
    deps.stderr.write(
      `\nenvkeep: no account exists yet. Open this one-time link to create the first owner (it works once, for 24 hours):\n\n  ${config.baseUrl}/setup?token=${token}\n\n`,
    )
    log.info('setup link printed to the terminal (stderr); it is valid for 24 hours and works once')
  }
  // logged last before the signal handlers are set (below, in the same turn): a SIGTERM sent once
  // this line is seen shuts down gracefully; an await between them let one end the process unclosed
  log.info({ baseUrl: config.baseUrl, dataDir: config.dataDir, masterKey: source.kind }, 'envkeep-server started')

  async function sweep(): Promise<void> {
    try {
      // pending pushes are expired by the plugin's own housekeeping
      await accounts.deleteExpired(now())
    } catch (err) {
      log.error({ kind: err instanceof Error ? err.name : typeof err, reason: err instanceof Error ? err.message : '' }, 'sweep failed')
    }
  }
  let sweeping: Promise<void> | null = sweep()
  const timer = setInterval(() => {
    if (!sweeping) sweeping = sweep().finally(() => (sweeping = null))
  }, SWEEP_INTERVAL_MS)
  timer.unref()
  void sweeping.finally(() => (sweeping = null))

  return new Promise<number>((resolve) => {
    const unsubscribe = (deps.onShutdownSignal ?? processSignals)(function onSignal(signal) {
      if (stopping) return
      stopping = true
      log.info({ signal }, 'shutting down: no new connections, in-flight requests finish')
      clearInterval(timer)
      let forced = false
      let lastResort: NodeJS.Timeout | undefined
      const force = setTimeout(() => {
        forced = true
        log.error({ graceSeconds: config.shutdownGraceSeconds }, 'requests still in flight after the grace period (ENVKEEP_SHUTDOWN_GRACE); closing anyway')
        // their connections are cut, so the close below can finish (and the process end)
        app.server.closeAllConnections()
        lastResort = setTimeout(() => void stores.close().finally(() => resolve(1)), 5_000)
        lastResort.unref()
      }, config.shutdownGraceSeconds * 1000)
      force.unref()
      void (async () => {
        try {
          await app.close()
          if (metricsServer) await new Promise((r) => metricsServer!.close(r))
          await sweeping
          process.off('SIGHUP', onHangup)
          // what the last requests logged goes out before the database closes (or waits there for the next start)
          if (audit) {
            await audit.flush()
            await audit.stop()
          }
          await stores.close()
          log.info('envkeep-server stopped; database closed')
          log.flush()
          clearTimeout(force)
          clearTimeout(lastResort)
          unsubscribe()
          resolve(forced ? 1 : EXIT_OK)
        } catch (err) {
          log.error({ kind: err instanceof Error ? err.name : typeof err }, 'shutdown failed')
          clearTimeout(force)
          clearTimeout(lastResort)
          unsubscribe()
          resolve(1)
        }
      })()
    })
  })
}

import { createHash, createHmac, randomUUID } from 'node:crypto'
import { closeSync, fdatasyncSync, mkdirSync, openSync, writeSync } from 'node:fs'
import { dirname } from 'node:path'
import { sql, type Kysely } from 'kysely'
import { accessAfter, mergeLines, serverAfter, type AuditLine } from './audit-lines.js'

/** Where ENVKEEP_AUDIT_STREAM sends: a file (JSON Lines appended) or an https endpoint (batches POSTed). */
export type AuditSink = { readonly kind: 'file'; readonly path: string } | { readonly kind: 'https'; readonly url: string; readonly secret: string }

export interface AuditStreamLog {
  info(o: object, msg: string): void
  warn(o: object, msg: string): void
}

const BATCH = 500
const LEASE_MS = 30_000
const SEND_TIMEOUT_MS = 10_000
const MAX_BACKOFF_MS = 60_000

/**
 * The cursor of each sink, in the database: how far the access log and the server audit log
 * were sent, and which process sends (a lease), so that several processes on one PostgreSQL
 * send each entry once between them, and a restart resends what was not sent. Created here
 * (not a migration) so the stream stays one self-contained feature; restore creates it too.
 */
export async function ensureAuditStreamTable(db: Kysely<unknown>, kind: 'sqlite' | 'postgres'): Promise<void> {
  const int = kind === 'sqlite' ? sql`integer` : sql`bigint`
  await sql`create table if not exists audit_stream_state (
    sink text primary key,
    access_log_id ${int} not null default 0,
    audit_log_id ${int} not null default 0,
    holder text,
    held_until ${int}
  )`.execute(db)
}

/** The signature of a batch: `sha256=<hex HMAC-SHA256 of "<timestamp>.<body>">`, like the webhooks' with the time bound in. */
export function auditSignature(secret: string, timestamp: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.${body}`, 'utf8').digest('hex')}`
}

/**
 * Lines that can be sent now: in id order from the cursor, stopping at a gap younger than
 * `gapWaitMs` (on PostgreSQL an id can commit after a higher one: wait for it) and skipping
 * older gaps (a rolled-back transaction, a deleted vault's entries).
 */
export function sendable(lines: readonly AuditLine[], cursor: number, gaps: Map<string, number>, key: string, now: number, gapWaitMs: number): AuditLine[] {
  const out: AuditLine[] = []
  let expected = cursor + 1
  for (const l of lines) {
    if (l.id > expected && cursor > 0) {
      const gapKey = `${key}:${expected}`
      const first = gaps.get(gapKey) ?? now
      gaps.set(gapKey, first)
      if (now - first < gapWaitMs) break
      gaps.delete(gapKey)
    }
    out.push(l)
    expected = l.id + 1
    cursor = l.id
  }
  return out
}

export interface AuditStream {
  /** creates the cursor table and starts sending every `intervalMs` */
  start(): Promise<void>
  /** SIGHUP: a file sink is opened again at its path on the next write (after logrotate moved it) */
  reopen(): void
  /** sends what is due now (at shutdown); never throws */
  flush(): Promise<void>
  stop(): Promise<void>
}

export function createAuditStream(o: {
  db: Kysely<unknown>
  kind: 'sqlite' | 'postgres'
  sink: AuditSink
  log: AuditStreamLog
  intervalMs?: number
  gapWaitMs?: number
  onSent?: (n: number) => void
  onFailed?: () => void
}): AuditStream {
  const sinkId = createHash('sha256')
    .update(o.sink.kind === 'file' ? `file:${o.sink.path}` : o.sink.url)
    .digest('hex')
    .slice(0, 32)
  const me = randomUUID()
  const gapWaitMs = o.gapWaitMs ?? (o.kind === 'postgres' ? 30_000 : 0)
  const gaps = new Map<string, number>()
  let fd: number | null = null
  let timer: NodeJS.Timeout | null = null
  let running: Promise<void> | null = null
  let failures = 0
  let nextTry = 0

  async function holdLease(now: number): Promise<boolean> {
    const r = await sql`update audit_stream_state set holder = ${me}, held_until = ${now + LEASE_MS}
      where sink = ${sinkId} and (holder is null or holder = ${me} or held_until < ${now})`.execute(o.db)
    return Number(r.numAffectedRows ?? 0) > 0
  }

  async function write(lines: readonly AuditLine[]): Promise<void> {
    const body = `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`
    if (o.sink.kind === 'file') {
      if (fd === null) {
        mkdirSync(dirname(o.sink.path), { recursive: true, mode: 0o700 })
        fd = openSync(o.sink.path, 'a', 0o600)
      }
      writeSync(fd, body)
      fdatasyncSync(fd)
      return
    }
    const timestamp = String(Math.floor(Date.now() / 1000))
    const res = await fetch(o.sink.url, {
      method: 'POST',
      redirect: 'manual',
      signal: AbortSignal.timeout(SEND_TIMEOUT_MS),
      headers: {
        'content-type': 'application/x-ndjson',
        'user-agent': 'envkeep-audit-stream',
        'x-envkeep-timestamp': timestamp,
        'x-envkeep-signature': auditSignature(o.sink.secret, timestamp, body),
      },
      body,
    })
    await res.arrayBuffer().catch(() => undefined)
    if (res.status < 200 || res.status > 299) throw new Error(`the endpoint answered ${res.status}`)
  }

  /** One batch: true when a full batch went (more may wait). */
  async function sendBatch(): Promise<boolean> {
    const now = Date.now()
    if (!(await holdLease(now))) return false
    const state = (await sql`select access_log_id, audit_log_id from audit_stream_state where sink = ${sinkId}`.execute(o.db)).rows[0] as
      | { access_log_id: number | string; audit_log_id: number | string }
      | undefined
    if (!state) return false
    const accessCursor = Number(state.access_log_id)
    const serverCursor = Number(state.audit_log_id)
    const access = sendable(await accessAfter(o.db, accessCursor, BATCH), accessCursor, gaps, 'access', now, gapWaitMs)
    const server = sendable(await serverAfter(o.db, serverCursor, BATCH), serverCursor, gaps, 'server', now, gapWaitMs)
    if (access.length + server.length === 0) return false
    const lines = mergeLines(access, server)
    await write(lines)
    await sql`update audit_stream_state set access_log_id = ${access.at(-1)?.id ?? accessCursor}, audit_log_id = ${server.at(-1)?.id ?? serverCursor}
      where sink = ${sinkId} and holder = ${me}`.execute(o.db)
    o.onSent?.(lines.length)
    return access.length === BATCH || server.length === BATCH
  }

  async function run(): Promise<void> {
    if (Date.now() < nextTry) return
    try {
      for (let i = 0; i < 20 && (await sendBatch()); i++);
      if (failures > 0) o.log.info({ sink: o.sink.kind, after: failures }, 'audit stream sending again')
      failures = 0
    } catch (err) {
      failures++
      const wait = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** Math.min(failures, 6))
      nextTry = Date.now() + wait
      o.onFailed?.()
      if (fd !== null && o.sink.kind === 'file') {
        closeSync(fd)
        fd = null
      }
      // the reason, never a line: a message of ours or a low-level code
      const reason =
        err instanceof Error && /^the endpoint answered \d+$/.test(err.message) ? err.message : ((err as NodeJS.ErrnoException).code ?? (err as Error).name)
      o.log.warn({ sink: o.sink.kind, failures, retryInSeconds: wait / 1000, reason }, 'audit stream could not send; kept, will retry')
    }
  }

  function tick(): void {
    if (running) return
    running = run().finally(() => (running = null))
  }

  return {
    async start() {
      await ensureAuditStreamTable(o.db, o.kind)
      await sql`insert into audit_stream_state (sink, access_log_id, audit_log_id) values (${sinkId}, 0, 0) on conflict (sink) do nothing`.execute(o.db)
      timer = setInterval(tick, o.intervalMs ?? 2000)
      timer.unref()
      tick()
    },
    reopen() {
      if (fd !== null) {
        closeSync(fd)
        fd = null
      }
    },
    async flush() {
      await running
      nextTry = 0
      await run()
    },
    async stop() {
      if (timer) clearInterval(timer)
      timer = null
      await running
      await sql`update audit_stream_state set holder = null, held_until = null where sink = ${sinkId} and holder = ${me}`.execute(o.db).catch(() => undefined)
      if (fd !== null) closeSync(fd)
      fd = null
    },
  }
}

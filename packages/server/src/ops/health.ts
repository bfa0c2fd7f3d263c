import type { FastifyInstance } from 'fastify'
import { sql, type Kysely } from 'kysely'

/** Why the server is not ready, in words for an operator (never a host, a SQLSTATE or a stack), or null when ready. */
export type ReadinessProbe = () => Promise<string | null>

/** The kysely handle of a SQLite or PostgreSQL storage (`storage.database.db`), or null (the in-memory store). */
export function databaseOf(storage: unknown): { db: Kysely<unknown>; kind: 'sqlite' | 'postgres' } | null {
  const database = (storage as { database?: { db?: unknown; sqlite?: unknown; pool?: unknown } } | null)?.database
  if (!database?.db) return null
  return { db: database.db as Kysely<unknown>, kind: database.sqlite ? 'sqlite' : 'postgres' }
}

const PROBE_TIMEOUT_MS = 2_000

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T | 'timeout'> {
  let timer: NodeJS.Timeout | undefined
  const t = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), ms)
  })
  return Promise.race([p, t]).finally(() => clearTimeout(timer))
}

/** How many migrations the database has run, over every migration table (the storage's and the server's). */
async function migrationsRun(db: Kysely<unknown>, kind: 'sqlite' | 'postgres'): Promise<number> {
  const tables =
    kind === 'sqlite'
      ? ((await sql`select name from sqlite_master where type = 'table' and name like '%migration'`.execute(db)).rows as { name: string }[]).map((r) => r.name)
      : (
          (
            await sql`select table_name as name from information_schema.tables where table_schema = current_schema() and table_name like '%migration'`.execute(
              db,
            )
          ).rows as { name: string }[]
        ).map((r) => r.name)
  let n = 0
  for (const table of tables) n += Number(((await sql`select count(*) as n from ${sql.id(table)}`.execute(db)).rows[0] as { n: number | string }).n)
  return n
}

/**
 * Readiness: the master key is loaded, the database answers within 2 seconds, and its schema
 * is the one this process migrated at start (a newer version that migrated it since makes this
 * process stale). Nothing is cached: a database that comes back makes the next probe ready.
 */
export function createReadinessProbe(o: { storage: unknown; keyLoaded: () => boolean; timeoutMs?: number }): ReadinessProbe {
  const database = databaseOf(o.storage)
  let migrationsAtStart: number | null = null
  return async function ready(): Promise<string | null> {
    if (!o.keyLoaded()) return 'no master key is loaded (set ENVKEEP_MASTER_KEY or ENVKEEP_MASTER_KEY_FILE)'
    if (!database) return null
    let n: number | 'timeout'
    try {
      n = await withTimeout(migrationsRun(database.db, database.kind), o.timeoutMs ?? PROBE_TIMEOUT_MS)
    } catch {
      return 'the database does not answer'
    }
    if (n === 'timeout') return `the database did not answer within ${(o.timeoutMs ?? PROBE_TIMEOUT_MS) / 1000} seconds`
    migrationsAtStart ??= n
    if (n > migrationsAtStart) return 'the database schema was migrated by a newer envkeep-server since this process started; restart it with that version'
    if (n < migrationsAtStart) return 'the database schema is older than this process expects (was the database replaced?)'
    return null
  }
}

const HEALTH_HEADERS = { 'cache-control': 'no-store, private', 'content-type': 'application/json; charset=utf-8' }

/**
 * `GET /healthz` (the process serves; touches no database, no key) and `GET /readyz` (200 when
 * the probe finds nothing wrong, else 503 with the reason). No sign-in, no rate limit, and not
 * logged per request (`logLevel: 'silent'`): an orchestrator polls them every few seconds.
 */
export async function healthRoutes(app: FastifyInstance, o: { probe: ReadinessProbe; basePath: string }): Promise<void> {
  const prefixes = o.basePath === '' ? [''] : ['', o.basePath]
  for (const prefix of prefixes) {
    app.get(`${prefix}/healthz`, { logLevel: 'silent' }, async function healthz(_request, reply) {
      return reply.code(200).headers(HEALTH_HEADERS).send('{"status":"ok"}')
    })
    app.get(`${prefix}/readyz`, { logLevel: 'silent' }, async function readyz(_request, reply) {
      const reason = await o.probe()
      if (reason === null) return reply.code(200).headers(HEALTH_HEADERS).send('{"status":"ready"}')
      return reply
        .code(503)
        .headers(HEALTH_HEADERS)
        .send(JSON.stringify({ status: 'not ready', reason }))
    })
  }
}

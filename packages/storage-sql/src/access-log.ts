import type { AccessLogEntry } from '@envkeep/env-api-plugin'
import type { Compilable } from 'kysely'
import type { SqlDialect } from './dialect.js'
import { fixedQuery } from './fixed-query.js'
import { run } from './op.js'
import { toJson } from './rows.js'

const COLUMNS = 11
/** Batches up to this many entries use a statement compiled (and prepared) once; a bigger one (rare) is compiled for itself. */
const MOST_FIXED = 32

/** The insert of `count` entries, its text compiled once per dialect and count. */
const insertOf = (count: number) =>
  fixedQuery<unknown[], unknown>(
    (d, arg) =>
      d.db.insertInto('access_log').values(
        Array.from({ length: count }, (_, i) => {
          const at = (k: number) => arg(i * COLUMNS + k)
          return {
            vault_id: at(0),
            at: at(1),
            person_id: at(2),
            sign_in_id: at(3),
            client_id: at(4),
            action: at(5),
            environment: at(6),
            names: at(7),
            address: at(8),
            subject: at(9),
            detail: at(10),
          }
        }),
      ),
    count <= MOST_FIXED ? `access_log_${count}` : undefined,
  )

const fixedInserts = Array.from({ length: MOST_FIXED + 1 }, (_, n) => (n === 0 ? null : insertOf(n)))

/** Appends one access-log entry, in the operation's transaction (compiled once: every read writes one). */
export function* insertLog(d: SqlDialect, e: AccessLogEntry) {
  yield* insertLogs(d, [e])
}

/**
 * Appends several entries in ONE statement (the reads of one event-loop turn), in order:
 * a single statement, so PostgreSQL runs it without BEGIN and COMMIT (`oneStatement`).
 */
export function* insertLogs(d: SqlDialect, entries: readonly AccessLogEntry[]) {
  return yield* run(logInsert(d, entries))
}

/** The statement that appends `entries` (for an operation that runs it together with others). */
export function logInsert(d: SqlDialect, entries: readonly AccessLogEntry[]): Compilable<unknown> {
  return (fixedInserts[entries.length] ?? insertOf(entries.length))(d, ...entries.flatMap(logParams))
}

function logParams(e: AccessLogEntry) {
  return [
    e.vaultId,
    e.at.getTime(),
    e.personId,
    e.signInId,
    e.clientId,
    e.action,
    e.environment,
    toJson(e.names),
    e.address,
    e.subject ?? null,
    e.detail ?? null,
  ] as const
}

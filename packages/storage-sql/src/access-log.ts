import type { AccessLogEntry } from '@envkeep/env-api-plugin'
import type { SqlDialect } from './dialect.js'
import { fixedQuery } from './fixed-query.js'
import { run } from './op.js'
import { toJson } from './rows.js'

const insert = fixedQuery<unknown[], unknown>((d, arg) =>
  d.db.insertInto('access_log').values({
    vault_id: arg(0),
    at: arg(1),
    person_id: arg(2),
    sign_in_id: arg(3),
    client_id: arg(4),
    action: arg(5),
    environment: arg(6),
    names: arg(7),
    address: arg(8),
    subject: arg(9),
    detail: arg(10),
  }),
)

/** Appends one access-log entry, in the operation's transaction (compiled once: every read writes one). */
export function* insertLog(d: SqlDialect, e: AccessLogEntry) {
  yield* run(insert(d, ...logParams(e)))
}

/** Appends several entries in one statement (the reads of one event-loop turn), in order. */
export function* insertLogs(d: SqlDialect, entries: readonly AccessLogEntry[]) {
  if (entries.length === 1) return yield* insertLog(d, entries[0] as AccessLogEntry)
  yield* run(
    d.db.insertInto('access_log').values(
      entries.map((e) => {
        const [vault_id, at, person_id, sign_in_id, client_id, action, environment, names, address, subject, detail] = logParams(e)
        return { vault_id, at, person_id, sign_in_id, client_id, action, environment, names, address, subject, detail }
      }),
    ),
  )
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

import type { AccessLogEntry } from '@envkeep/env-api-plugin'
import type { SqlDialect } from './dialect.js'
import { run } from './op.js'
import { toJson } from './rows.js'

/** Appends one access-log entry, in the operation's transaction. */
export function* insertLog(d: SqlDialect, e: AccessLogEntry) {
  yield* run(
    d.db.insertInto('access_log').values({
      vault_id: e.vaultId,
      at: e.at.getTime(),
      person_id: e.personId,
      sign_in_id: e.signInId,
      client_id: e.clientId,
      action: e.action,
      environment: e.environment,
      names: toJson(e.names),
      address: e.address,
      subject: e.subject ?? null,
      detail: e.detail ?? null,
    }),
  )
}

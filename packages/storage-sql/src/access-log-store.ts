import type { AccessAction, AccessLogEntry, AccessLogRow, ChangeResult, VaultStore } from '@envkeep/env-api-plugin'
import { insertLog } from './access-log.js'
import type { SqlRunner } from './dialect.js'
import { all } from './op.js'
import { date, fromJson, num } from './rows.js'

/** Done, with nothing to say (a change that is never refused). */
export const DONE: ChangeResult<never> = Object.freeze({ ok: true, value: undefined })

/** The access log (vault-store.ts in the plugin): table access_log. */
export function createAccessLogStore(s: SqlRunner): Pick<VaultStore, 'appendAccessLog' | 'listAccessLog'> {
  const d = s.dialect
  return {
    // a write of its own: on SQLite, the appends of one event-loop turn share one commit (the runner's group commit)
    appendAccessLog: (entry: AccessLogEntry) =>
      s.write(function* () {
        yield* insertLog(d, entry)
        return DONE
      }),
    listAccessLog: (vaultId, filter) =>
      s.read(function* () {
        const rows = yield* all(
          d.db
            .selectFrom('access_log')
            .selectAll()
            .where('vault_id', '=', vaultId)
            .$if(filter.environment !== undefined, (q) => q.where('environment', '=', filter.environment ?? ''))
            .$if(filter.action !== undefined, (q) => q.where('action', '=', filter.action ?? ''))
            .$if(filter.before !== undefined, (q) => q.where('id', '<', filter.before ?? 0))
            .orderBy('id', 'desc')
            .limit(Math.max(0, Math.trunc(filter.limit))),
        )
        return rows.map(
          (r): AccessLogRow => ({
            id: num(r.id),
            vaultId: r.vault_id,
            at: date(r.at),
            personId: r.person_id,
            signInId: r.sign_in_id,
            clientId: r.client_id,
            action: r.action as AccessAction,
            environment: r.environment,
            names: fromJson<string[]>(r.names),
            address: r.address,
            subject: r.subject,
            detail: r.detail,
          }),
        )
      }),
  }
}

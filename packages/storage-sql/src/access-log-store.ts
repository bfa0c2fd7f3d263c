import type { AccessAction, AccessLogEntry, AccessLogRow, ChangeResult, VaultStore } from '@envkeep/env-api-plugin'
import { insertLogs } from './access-log.js'
import type { SqlRunner } from './dialect.js'
import { all } from './op.js'
import { perTurn } from './per-turn.js'
import { date, fromJson, num } from './rows.js'

/** Done, with nothing to say (a change that is never refused). */
export const DONE: ChangeResult<never> = Object.freeze({ ok: true, value: undefined })

interface Pending {
  readonly entry: AccessLogEntry
  readonly resolve: (done: ChangeResult<never>) => void
  readonly reject: (err: unknown) => void
}

/** The access log (vault-store.ts in the plugin): table access_log. */
export function createAccessLogStore(s: SqlRunner): Pick<VaultStore, 'appendAccessLog' | 'listAccessLog'> {
  const d = s.dialect
  const one = (entry: AccessLogEntry) => s.write(() => insertLogs(d, [entry]), { oneStatement: true })
  // The appends of one event-loop turn (the concurrent reads) go as ONE statement, one
  // transaction, one commit (one fsync on SQLite, one round trip on PostgreSQL); each
  // read answers only once that commit is done. If the statement fails, each entry is
  // tried alone, so only an entry that cannot be written fails its read.
  const append = perTurn(async (batch: Pending[]): Promise<void> => {
    try {
      await s.write(
        () =>
          insertLogs(
            d,
            batch.map((p) => p.entry),
          ),
        { oneStatement: true },
      )
      for (const p of batch) p.resolve(DONE)
    } catch (err) {
      if (batch.length === 1) return (batch[0] as Pending).reject(err)
      await Promise.all(batch.map((p) => one(p.entry).then(() => p.resolve(DONE), p.reject)))
    }
  })
  return {
    appendAccessLog: (entry: AccessLogEntry) => new Promise<ChangeResult<never>>((resolve, reject) => append({ entry, resolve, reject })),
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

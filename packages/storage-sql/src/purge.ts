import type { PurgeCuts, Storage } from '@envkeep/env-api-plugin'
import type { SqlRunner } from './dialect.js'
import { run } from './op.js'

/**
 * The housekeeping purge (`purgeExpired` on Storage), in one transaction: OAuth codes, tokens
 * and ended sign-ins, used subject-token keys, finished webhook deliveries, and, where the
 * backend keeps them (`rateCounters`: PostgreSQL), request counters whose window ended.
 */
export function createPurge(s: SqlRunner, o: { readonly rateCounters: boolean }): Pick<Storage, 'purgeExpired'> {
  const { db } = s.dialect
  return {
    purgeExpired: (cuts: PurgeCuts) =>
      s.write(function* () {
        const now = cuts.now.getTime()
        const cutoff = cuts.signInsBefore.getTime()
        const ended = db
          .selectFrom('sign_ins')
          .select('id')
          .where((eb) => eb.or([eb('revoked_at', '<', cutoff), eb('expires_at', '<', cutoff)]))
        let n = 0
        n += yield* run(db.deleteFrom('oauth_codes').where('expires_at', '<', cuts.codesBefore.getTime()))
        n += yield* run(db.deleteFrom('access_tokens').where('expires_at', '<', now))
        // tokens first: the foreign keys' cascade is not relied on (foreign_keys may be off on a SQLite copy)
        n += yield* run(db.deleteFrom('refresh_tokens').where('sign_in_id', 'in', ended))
        n += yield* run(db.deleteFrom('access_tokens').where('sign_in_id', 'in', ended))
        n += yield* run(db.deleteFrom('sign_ins').where((eb) => eb.or([eb('revoked_at', '<', cutoff), eb('expires_at', '<', cutoff)])))
        n += yield* run(db.deleteFrom('used_subject_tokens').where('expires_at', '<', now))
        n += yield* run(db.deleteFrom('webhook_deliveries').where('status', '<>', 'pending').where('occurred_at', '<', cuts.deliveriesBefore.getTime()))
        if (o.rateCounters) n += yield* run(db.deleteFrom('rate_counters').where((eb) => eb(eb('window_start', '+', eb.ref('window_ms')), '<', now)))
        return { ok: true as const, value: n }
      }),
  }
}

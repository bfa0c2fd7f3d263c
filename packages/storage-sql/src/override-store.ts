import type { AccessLogEntry, ChangeResult, OverrideChange, OverrideRow, OverrideStore } from '@envkeep/env-api-plugin'
import { insertLog } from './access-log.js'
import { DONE } from './access-log-store.js'
import type { SqlDialect, SqlRunner } from './dialect.js'
import { all, first, type Op, run } from './op.js'
import { bytes, copyBytes, date } from './rows.js'

/** Personal overrides (override-store.ts in the plugin): tables override_environments and overrides. */
export function createOverrideStore(s: SqlRunner): OverrideStore {
  const d = s.dialect
  return {
    readOverrides: (vaultId, environment, personId) => s.read(() => readOverrides(d, vaultId, environment, personId)),
    changeOverride: (change, log) => s.write(() => changeOverride(d, change, log)),
  }
}

function* readOverrides(d: SqlDialect, vaultId: string, environment: string, personId: string | undefined) {
  const allowed = yield* first(
    d.db.selectFrom('override_environments').select('vault_id').where('vault_id', '=', vaultId).where('environment', '=', environment),
  )
  const rows = yield* all(
    d.db
      .selectFrom('overrides')
      .select(['name', 'person_id', 'sealed', 'updated_at'])
      .where('vault_id', '=', vaultId)
      .where('environment', '=', environment)
      .$if(personId !== undefined, (q) => q.where('person_id', '=', personId ?? ''))
      .orderBy(d.byBytes('name'))
      .orderBy(d.byBytes('person_id')),
  )
  const overrides: OverrideRow[] = rows.map((r) => ({ name: r.name, personId: r.person_id, sealed: copyBytes(r.sealed), updatedAt: date(r.updated_at) }))
  return { allowed: allowed !== undefined, overrides }
}

function* changeOverride(d: SqlDialect, change: OverrideChange, log: AccessLogEntry): Op<ChangeResult<'not_found' | 'not_allowed' | 'unchanged'>> {
  const { vaultId, environment } = change
  // the environment's row is locked (PostgreSQL): a switch turned off cannot race a new override
  const env = yield* first(
    d.db
      .selectFrom('environments')
      .select('name')
      .where('vault_id', '=', vaultId)
      .where('name', '=', environment)
      .$if(d.rowLocks, (q) => q.forUpdate()),
  )
  if (!env) return { ok: false, reason: 'not_found' }
  let changed: number
  if (change.kind === 'allow') {
    if (change.allow) {
      changed = yield* run(
        d.db
          .insertInto('override_environments')
          .values({ vault_id: vaultId, environment })
          .onConflict((oc) => oc.doNothing()),
      )
    } else {
      changed = yield* run(d.db.deleteFrom('override_environments').where('vault_id', '=', vaultId).where('environment', '=', environment))
      // the cascade may be off (a copy of a SQLite file): the rows go explicitly
      if (changed > 0) yield* run(d.db.deleteFrom('overrides').where('vault_id', '=', vaultId).where('environment', '=', environment))
    }
  } else if (change.sealed === null) {
    changed = yield* run(
      d.db
        .deleteFrom('overrides')
        .where('vault_id', '=', vaultId)
        .where('environment', '=', environment)
        .where('name', '=', change.name)
        .where('person_id', '=', change.personId),
    )
  } else {
    const allowed = yield* first(
      d.db.selectFrom('override_environments').select('vault_id').where('vault_id', '=', vaultId).where('environment', '=', environment),
    )
    if (!allowed) return { ok: false, reason: 'not_allowed' }
    changed = yield* run(
      d.db
        .insertInto('overrides')
        .values({
          vault_id: vaultId,
          environment,
          name: change.name,
          person_id: change.personId,
          sealed: bytes(change.sealed),
          updated_at: change.now.getTime(),
        })
        .onConflict((oc) =>
          oc
            .columns(['vault_id', 'environment', 'name', 'person_id'])
            .doUpdateSet({ sealed: (eb) => eb.ref('excluded.sealed'), updated_at: (eb) => eb.ref('excluded.updated_at') }),
        ),
    )
  }
  if (changed === 0) return { ok: false, reason: 'unchanged' }
  yield* insertLog(d, log)
  return DONE
}

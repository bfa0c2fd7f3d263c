import type { AccessLogEntry, ChangeResult, CiIdentityChange, CiIdentityRecord, CiIdentityStore } from '@envkeep/env-api-plugin'
import { ciPrincipal } from '@envkeep/env-api-plugin'
import type { Selectable } from 'kysely'
import { insertLog } from './access-log.js'
import { lockVault } from './vault-lock.js'
import type { SqlDialect, SqlRunner } from './dialect.js'
import { all, first, run, type Step } from './op.js'
import { insertAccessToken, signInRow } from './oauth-store.js'
import { date, fromJson, toJson } from './rows.js'
import type { CiIdentitiesTable } from './schema.js'

function toIdentity(r: Selectable<CiIdentitiesTable>): CiIdentityRecord {
  return Object.freeze({
    id: r.id,
    vaultId: r.vault_id,
    name: r.name,
    issuer: r.issuer,
    audience: r.audience,
    subjectPattern: r.subject_pattern,
    requiredClaims: Object.freeze(fromJson<Record<string, string>>(r.required_claims)),
    role: r.role,
    environments: r.environments === null ? null : Object.freeze(fromJson<string[]>(r.environments)),
    createdAt: date(r.created_at),
  })
}

/** CI identities and workload sign-ins (ci-identity-store.ts in the plugin): tables ci_identities, used_subject_tokens. */
export function createCiIdentityStore(s: SqlRunner): CiIdentityStore {
  const d = s.dialect
  const { db } = d
  const identities = db.selectFrom('ci_identities').selectAll()
  return {
    changeCiIdentity: (change, log) => s.write(() => changeCiIdentity(d, change, log)),

    findCiIdentities: (filter) =>
      s.read(function* () {
        const q =
          'vaultId' in filter
            ? identities.where('vault_id', '=', filter.vaultId)
            : 'issuer' in filter
              ? identities.where('issuer', '=', filter.issuer)
              : identities.where('id', '=', filter.id)
        return (yield* all(q.orderBy(d.byBytes('name')).orderBy(d.byBytes('id')))).map(toIdentity)
      }),

    issueCiSignIn: (input) =>
      s.write(function* (): Generator<Step, ChangeResult<'replayed'>, unknown> {
        const used = yield* run(
          db
            .insertInto('used_subject_tokens')
            .values({ key: input.subjectTokenKey, expires_at: input.subjectTokenExpiresAt.getTime() })
            .onConflict((oc) => oc.column('key').doNothing()),
        )
        if (used === 0) return { ok: false, reason: 'replayed' }
        const si = input.signIn
        yield* run(db.insertInto('sign_ins').values(signInRow(d, si, null, null)))
        yield* insertAccessToken(d, si.id, input.accessTokenHash, si.expiresAt, si.createdAt)
        return { ok: true, value: undefined }
      }),
  }
}

function* changeCiIdentity(
  d: SqlDialect,
  change: CiIdentityChange,
  log: AccessLogEntry,
): Generator<Step, ChangeResult<'name_taken' | 'not_found', CiIdentityRecord>, unknown> {
  const { db } = d
  if (change.kind === 'remove') {
    const gone = yield* all(db.deleteFrom('ci_identities').where('id', '=', change.id).where('vault_id', '=', change.vaultId).returningAll())
    const was = gone[0]
    if (!was) return { ok: false, reason: 'not_found' }
    yield* run(
      db.updateTable('sign_ins').set({ revoked_at: change.now.getTime() }).where('person_id', '=', ciPrincipal(change.id)).where('revoked_at', 'is', null),
    )
    yield* insertLog(d, log)
    return { ok: true, value: toIdentity(was) }
  }
  const input = change.identity
  // two identities of one name cannot race
  if (!(yield* lockVault(d, input.vaultId))) return { ok: false, reason: 'not_found' }
  const taken = yield* first(
    db
      .selectFrom('ci_identities')
      .select('id')
      .where('vault_id', '=', input.vaultId)
      .where((eb) => eb(eb.fn('lower', ['name']), '=', input.name.toLowerCase())),
  )
  if (taken) return { ok: false, reason: 'name_taken' }
  const row = {
    id: input.id,
    vault_id: input.vaultId,
    name: input.name,
    issuer: input.issuer,
    audience: input.audience,
    subject_pattern: input.subjectPattern,
    required_claims: toJson(input.requiredClaims),
    role: input.role,
    environments: input.environments === null ? null : toJson(input.environments),
    created_at: input.now.getTime(),
  }
  yield* run(db.insertInto('ci_identities').values(row))
  yield* insertLog(d, log)
  return { ok: true, value: toIdentity(row) }
}

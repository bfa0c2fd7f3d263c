import type { AccessLogEntry, CiIdentityRecord, CiIdentityStore, CreateCiIdentityResult, NewCiIdentity, NewCiSignIn } from '@envkeep/env-api-plugin'
import type { Selectable } from 'kysely'
import type { OpenDatabase } from './database.js'
import type { CiIdentitiesTable } from './schema.js'
import { runSync } from './sqlite-errors.js'
import { INSERT_LOG_SQL, logParams } from './vault-store.js'

function toIdentity(r: Selectable<CiIdentitiesTable>): CiIdentityRecord {
  return Object.freeze({
    id: r.id,
    vaultId: r.vault_id,
    name: r.name,
    issuer: r.issuer,
    audience: r.audience,
    subjectPattern: r.subject_pattern,
    requiredClaims: Object.freeze(JSON.parse(r.required_claims) as Record<string, string>),
    role: r.role,
    environments: r.environments === null ? null : Object.freeze(JSON.parse(r.environments) as string[]),
    createdAt: new Date(r.created_at),
  })
}

/** CI identities and workload sign-ins on SQLite: each change one immediate transaction. */
export function createSqliteCiIdentityStore(d: OpenDatabase): CiIdentityStore {
  const db = d.db
  const all = (q: { compile(): { sql: string; parameters: readonly unknown[] } }) => {
    const c = q.compile()
    return d.sqlite.prepare(c.sql).all(...c.parameters) as Selectable<CiIdentitiesTable>[]
  }
  const run = (q: { compile(): { sql: string; parameters: readonly unknown[] } }) => {
    const c = q.compile()
    return d.sqlite.prepare(c.sql).run(...c.parameters).changes
  }
  const log = (e: AccessLogEntry) => d.sqlite.prepare(INSERT_LOG_SQL).run(...logParams(e))
  const identities = db.selectFrom('ci_identities').selectAll()

  return {
    createCiIdentity: (input: NewCiIdentity, entry: AccessLogEntry) =>
      runSync(
        d,
        'immediate',
        (): CreateCiIdentityResult => {
          const taken = all(identities.where('vault_id', '=', input.vaultId).where((eb) => eb(eb.fn('lower', ['name']), '=', input.name.toLowerCase())))
          if (taken.length > 0) return { ok: false, reason: 'name_taken' }
          run(
            db.insertInto('ci_identities').values({
              id: input.id,
              vault_id: input.vaultId,
              name: input.name,
              issuer: input.issuer,
              audience: input.audience,
              subject_pattern: input.subjectPattern,
              required_claims: JSON.stringify(input.requiredClaims),
              role: input.role,
              environments: input.environments === null ? null : JSON.stringify(input.environments),
              created_at: input.now.getTime(),
            }),
          )
          log(entry)
          return { ok: true, identity: toIdentity(all(identities.where('id', '=', input.id))[0] as Selectable<CiIdentitiesTable>) }
        },
        'ci_identities',
      ),

    findCiIdentities: (filter) =>
      runSync(
        d,
        'none',
        () =>
          all(
            ('vaultId' in filter
              ? identities.where('vault_id', '=', filter.vaultId)
              : 'issuer' in filter
                ? identities.where('issuer', '=', filter.issuer)
                : identities.where('id', '=', filter.id)
            )
              .orderBy('name')
              .orderBy('id'),
          ).map(toIdentity),
        'ci_identities',
      ),

    removeCiIdentity: (input, entry) =>
      runSync(
        d,
        'immediate',
        () => {
          const gone = run(db.deleteFrom('ci_identities').where('id', '=', input.id).where('vault_id', '=', input.vaultId))
          if (gone === 0) return false
          run(db.updateTable('sign_ins').set({ revoked_at: input.now.getTime() }).where('person_id', '=', `ci:${input.id}`).where('revoked_at', 'is', null))
          log(entry)
          return true
        },
        'ci_identities',
      ),

    issueCiSignIn: (input: NewCiSignIn) =>
      runSync(
        d,
        'immediate',
        (): 'issued' | 'replayed' => {
          const used = run(
            db
              .insertInto('used_subject_tokens')
              .values({ key: input.subjectTokenKey, expires_at: input.subjectTokenExpiresAt.getTime() })
              .onConflict((oc) => oc.column('key').doNothing()),
          )
          if (used === 0) return 'replayed'
          const s = input.signIn
          run(
            db.insertInto('sign_ins').values({
              id: s.id,
              person_id: s.personId,
              client_id: s.clientId,
              resource: s.resource,
              scopes: s.scopes.join(' '),
              code_hash: null,
              created_at: s.createdAt.getTime(),
              expires_at: s.expiresAt.getTime(),
              last_used_at: null,
              revoked_at: null,
              label: s.label,
            }),
          )
          run(
            db.insertInto('access_tokens').values({
              token_hash: input.accessTokenHash,
              sign_in_id: s.id,
              created_at: s.createdAt.getTime(),
              expires_at: s.expiresAt.getTime(),
            }),
          )
          return 'issued'
        },
        'sign_ins',
      ),
  }
}

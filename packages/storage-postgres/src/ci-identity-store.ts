import type { AccessLogEntry, CiIdentityRecord, CiIdentityStore, CreateCiIdentityResult, NewCiIdentity, NewCiSignIn } from '@envkeep/env-api-plugin'
import { ciPrincipal, StorageError } from '@envkeep/env-api-plugin'
import { sql, type Kysely } from 'kysely'
import { inTransaction, read } from './database.js'
import { insertLog, rows } from './vault-store.js'

type Q = Kysely<unknown>

interface Row {
  id: string
  vault_id: string
  name: string
  issuer: string
  audience: string
  subject_pattern: string
  required_claims: Record<string, string>
  role: 'editor' | 'owner'
  environments: string[] | null
  created_at: string
}

function toIdentity(r: Row): CiIdentityRecord {
  return {
    id: r.id,
    vaultId: r.vault_id,
    name: r.name,
    issuer: r.issuer,
    audience: r.audience,
    subjectPattern: r.subject_pattern,
    requiredClaims: r.required_claims,
    role: r.role,
    environments: r.environments,
    createdAt: new Date(Number(r.created_at)),
  }
}

/** CI identities on PostgreSQL; removing one ends its sign-ins in the same transaction. */
export class PostgresCiIdentityStore implements CiIdentityStore {
  readonly #db: Q

  constructor(db: Q) {
    this.#db = db
  }

  createCiIdentity(input: NewCiIdentity, log: AccessLogEntry): Promise<CreateCiIdentityResult> {
    return inTransaction(this.#db, async (trx): Promise<CreateCiIdentityResult> => {
      const [vault] = await rows(trx, sql`select 1 from vaults where id = ${input.vaultId} for update`)
      if (!vault) throw new StorageError('23503', 'ci_identities')
      const taken = await rows(trx, sql`select 1 from ci_identities where vault_id = ${input.vaultId} and lower(name) = lower(${input.name})`)
      if (taken.length > 0) return { ok: false, reason: 'name_taken' }
      const [r] = await rows<Row>(
        trx,
        sql`insert into ci_identities (id, vault_id, name, issuer, audience, subject_pattern, required_claims, role, environments, created_at)
          values (${input.id}, ${input.vaultId}, ${input.name}, ${input.issuer}, ${input.audience}, ${input.subjectPattern}, ${JSON.stringify(input.requiredClaims)}::jsonb, ${input.role},
            ${input.environments === null ? null : JSON.stringify(input.environments)}::jsonb, ${input.now.getTime()})
          returning *`,
      )
      await insertLog(trx, log)
      return { ok: true, identity: toIdentity(r!) }
    })
  }

  findCiIdentities(filter: { readonly vaultId: string } | { readonly issuer: string } | { readonly id: string }): Promise<CiIdentityRecord[]> {
    const where = 'vaultId' in filter ? sql`vault_id = ${filter.vaultId}` : 'issuer' in filter ? sql`issuer = ${filter.issuer}` : sql`id = ${filter.id}`
    return read(async () =>
      (await rows<Row>(this.#db, sql`select * from ci_identities where ${where} order by name collate "C", id collate "C"`)).map(toIdentity),
    )
  }

  removeCiIdentity(input: { readonly vaultId: string; readonly id: string; readonly now: Date }, log: AccessLogEntry): Promise<boolean> {
    return inTransaction(this.#db, async (trx) => {
      const r = await sql`delete from ci_identities where id = ${input.id} and vault_id = ${input.vaultId}`.execute(trx)
      if (Number(r.numAffectedRows ?? 0) === 0) return false
      await sql`update sign_ins set revoked_at = ${input.now.getTime()} where person_id = ${ciPrincipal(input.id)} and revoked_at is null`.execute(trx)
      await insertLog(trx, log)
      return true
    })
  }

  issueCiSignIn(input: NewCiSignIn): Promise<'issued' | 'replayed'> {
    return inTransaction(this.#db, async (trx) => {
      const used = await rows(
        trx,
        sql`insert into used_subject_tokens (key, expires_at) values (${input.subjectTokenKey}, ${input.subjectTokenExpiresAt.getTime()}) on conflict (key) do nothing returning key`,
      )
      if (used.length === 0) return 'replayed' as const
      const si = input.signIn
      await sql`insert into sign_ins (id, person_id, client_id, resource, scopes, code_hash, created_at, expires_at, last_used_at, revoked_at, label)
        values (${si.id}, ${si.personId}, ${si.clientId}, ${si.resource}, ${JSON.stringify(si.scopes)}::jsonb, null, ${si.createdAt.getTime()}, ${si.expiresAt.getTime()}, null, null, ${si.label})`.execute(
        trx,
      )
      await sql`insert into access_tokens (token_hash, sign_in_id, expires_at) values (${input.accessTokenHash}, ${si.id}, ${si.expiresAt.getTime()})`.execute(
        trx,
      )
      return 'issued' as const
    })
  }
}

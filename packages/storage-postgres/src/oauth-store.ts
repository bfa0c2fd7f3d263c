import type {
  AccessGrant,
  AuthorizationCodeRecord,
  ExchangeCodeResult,
  IssuedTokens,
  OAuthStore,
  RefreshTokenRecord,
  RotateRefreshResult,
  SignInRecord,
} from '@envkeep/env-api-plugin'
import { sql, type Kysely } from 'kysely'
import { inTransaction, read } from './database.js'
import { rows } from './vault-store.js'

type Q = Kysely<unknown>

/** last use is recorded at most this often per sign-in */
const LAST_USE_GRANULARITY_MS = 60_000

export interface SignInRow {
  id: string
  person_id: string
  client_id: string
  resource: string
  scopes: string[]
  code_hash: string | null
  created_at: string
  expires_at: string
  last_used_at: string | null
  revoked_at: string | null
  label: string | null
}

const date = (v: string | null): Date | null => (v === null ? null : new Date(Number(v)))

export function toSignIn(r: SignInRow): SignInRecord {
  return {
    id: r.id,
    personId: r.person_id,
    clientId: r.client_id,
    resource: r.resource,
    scopes: r.scopes,
    createdAt: new Date(Number(r.created_at)),
    expiresAt: new Date(Number(r.expires_at)),
    lastUsedAt: date(r.last_used_at),
    revokedAt: date(r.revoked_at),
    label: r.label,
  }
}

async function addTokens(trx: Q, signInId: string, t: IssuedTokens): Promise<void> {
  await sql`insert into access_tokens (token_hash, sign_in_id, expires_at) values (${t.accessTokenHash}, ${signInId}, ${t.accessExpiresAt.getTime()})`.execute(
    trx,
  )
  await sql`insert into refresh_tokens (token_hash, sign_in_id, used_at) values (${t.refreshTokenHash}, ${signInId}, null)`.execute(trx)
}

/** The OAuth store on PostgreSQL: code exchange and refresh rotation happen exactly once under concurrency (row locks). */
export class PostgresOAuthStore implements OAuthStore {
  readonly #db: Q

  constructor(db: Q) {
    this.#db = db
  }

  saveAuthorizationCode(c: AuthorizationCodeRecord): Promise<void> {
    return inTransaction(this.#db, async (trx) => {
      await sql`insert into oauth_codes (code_hash, client_id, redirect_uri, code_challenge, resource, scopes, person_id, created_at, expires_at, consumed_at)
        values (${c.codeHash}, ${c.clientId}, ${c.redirectUri}, ${c.codeChallenge}, ${c.resource}, ${JSON.stringify(c.scopes)}::jsonb, ${c.personId}, ${c.createdAt.getTime()}, ${c.expiresAt.getTime()}, ${c.consumedAt?.getTime() ?? null})`.execute(
        trx,
      )
    })
  }

  findAuthorizationCode(codeHash: string): Promise<AuthorizationCodeRecord | null> {
    return read(async () => {
      const [r] = await rows<{
        code_hash: string
        client_id: string
        redirect_uri: string
        code_challenge: string
        resource: string
        scopes: string[]
        person_id: string
        created_at: string
        expires_at: string
        consumed_at: string | null
      }>(this.#db, sql`select * from oauth_codes where code_hash = ${codeHash}`)
      if (!r) return null
      return {
        codeHash: r.code_hash,
        clientId: r.client_id,
        redirectUri: r.redirect_uri,
        codeChallenge: r.code_challenge,
        resource: r.resource,
        scopes: r.scopes,
        personId: r.person_id,
        createdAt: new Date(Number(r.created_at)),
        expiresAt: new Date(Number(r.expires_at)),
        consumedAt: date(r.consumed_at),
      }
    })
  }

  exchangeAuthorizationCode(
    codeHash: string,
    signIn: Omit<SignInRecord, 'lastUsedAt' | 'revokedAt'>,
    tokens: IssuedTokens,
    now: Date,
  ): Promise<ExchangeCodeResult> {
    return inTransaction(this.#db, async (trx): Promise<ExchangeCodeResult> => {
      const [code] = await rows<{ consumed_at: string | null }>(trx, sql`select consumed_at from oauth_codes where code_hash = ${codeHash} for update`)
      if (!code) return { outcome: 'unknown' }
      if (code.consumed_at !== null) {
        await sql`update sign_ins set revoked_at = ${now.getTime()} where code_hash = ${codeHash} and revoked_at is null`.execute(trx)
        return { outcome: 'replayed' }
      }
      await sql`update oauth_codes set consumed_at = ${now.getTime()} where code_hash = ${codeHash}`.execute(trx)
      const [row] = await rows<SignInRow>(
        trx,
        sql`insert into sign_ins (id, person_id, client_id, resource, scopes, code_hash, created_at, expires_at, last_used_at, revoked_at, label)
          values (${signIn.id}, ${signIn.personId}, ${signIn.clientId}, ${signIn.resource}, ${JSON.stringify(signIn.scopes)}::jsonb, ${codeHash}, ${signIn.createdAt.getTime()}, ${signIn.expiresAt.getTime()}, ${now.getTime()}, null, null)
          returning *`,
      )
      await addTokens(trx, signIn.id, tokens)
      return { outcome: 'issued', signIn: toSignIn(row!) }
    })
  }

  findRefreshToken(tokenHash: string): Promise<RefreshTokenRecord | null> {
    return read(async () => {
      const [r] = await rows<SignInRow & { used_at: string | null }>(
        this.#db,
        sql`select s.*, t.used_at from refresh_tokens t join sign_ins s on s.id = t.sign_in_id where t.token_hash = ${tokenHash}`,
      )
      return r ? { tokenHash, signIn: toSignIn(r), usedAt: date(r.used_at) } : null
    })
  }

  rotateRefreshToken(oldHash: string, tokens: IssuedTokens, now: Date): Promise<RotateRefreshResult> {
    return inTransaction(this.#db, async (trx): Promise<RotateRefreshResult> => {
      const [r] = await rows<SignInRow & { used_at: string | null }>(
        trx,
        sql`select s.*, t.used_at from refresh_tokens t join sign_ins s on s.id = t.sign_in_id where t.token_hash = ${oldHash} for update of t, s`,
      )
      if (!r) return { outcome: 'unknown' }
      if (r.revoked_at !== null || now.getTime() >= Number(r.expires_at)) return { outcome: 'unknown' }
      if (r.used_at !== null) {
        await sql`update sign_ins set revoked_at = ${now.getTime()} where id = ${r.id} and revoked_at is null`.execute(trx)
        return { outcome: 'reused' }
      }
      await sql`update refresh_tokens set used_at = ${now.getTime()} where token_hash = ${oldHash}`.execute(trx)
      await addTokens(trx, r.id, tokens)
      const [used] = await rows<SignInRow>(trx, sql`update sign_ins set last_used_at = ${now.getTime()} where id = ${r.id} returning *`)
      return { outcome: 'rotated', signIn: toSignIn(used!) }
    })
  }

  revokeByToken(tokenHash: string, clientId: string, now: Date): Promise<boolean> {
    return inTransaction(this.#db, async (trx) => {
      const r = await sql`update sign_ins set revoked_at = ${now.getTime()}
        where revoked_at is null and client_id = ${clientId}
          and id = coalesce((select sign_in_id from access_tokens where token_hash = ${tokenHash}), (select sign_in_id from refresh_tokens where token_hash = ${tokenHash}))`.execute(
        trx,
      )
      return Number(r.numAffectedRows ?? 0) > 0
    })
  }

  findAccessToken(tokenHash: string, now: Date, idleCutoff: Date): Promise<AccessGrant | null> {
    return read(async () => {
      const at = now.getTime()
      const [r] = await rows<SignInRow & { token_expires_at: string }>(
        this.#db,
        sql`select s.*, t.expires_at as token_expires_at from access_tokens t join sign_ins s on s.id = t.sign_in_id where t.token_hash = ${tokenHash}`,
      )
      if (!r) return null
      if (r.revoked_at !== null || at >= Number(r.token_expires_at) || at >= Number(r.expires_at)) return null
      if (Number(r.last_used_at ?? r.created_at) < idleCutoff.getTime()) return null
      let row = r
      if (r.last_used_at === null || at - Number(r.last_used_at) >= LAST_USE_GRANULARITY_MS) {
        // one statement, no transaction: the hot path stays one round trip more at most once a minute
        await sql`update sign_ins set last_used_at = ${at} where id = ${r.id} and (last_used_at is null or last_used_at < ${at})`.execute(this.#db)
        row = { ...r, last_used_at: String(at) }
      }
      return { signIn: toSignIn(row), tokenExpiresAt: new Date(Number(r.token_expires_at)) }
    })
  }

  listSignIns(personId: string): Promise<SignInRecord[]> {
    return read(async () =>
      (await rows<SignInRow>(this.#db, sql`select * from sign_ins where person_id = ${personId} order by created_at desc, id collate "C"`)).map(toSignIn),
    )
  }

  revokeSignIns(input: { readonly personId: string; readonly signInId?: string }, now: Date): Promise<number> {
    const one = input.signInId === undefined ? sql`` : sql`and id = ${input.signInId}`
    return inTransaction(this.#db, async (trx) => {
      const r = await sql`update sign_ins set revoked_at = ${now.getTime()} where person_id = ${input.personId} ${one} and revoked_at is null`.execute(trx)
      return Number(r.numAffectedRows ?? 0)
    })
  }

  purgeExpired(now: Date, codesBefore: Date, signInsBefore: Date): Promise<number> {
    return inTransaction(this.#db, async (trx) => {
      let n = 0
      const count = (r: { numAffectedRows?: bigint }) => (n += Number(r.numAffectedRows ?? 0))
      count(await sql`delete from oauth_codes where expires_at < ${codesBefore.getTime()}`.execute(trx))
      count(await sql`delete from access_tokens where expires_at < ${now.getTime()}`.execute(trx))
      const cutoff = signInsBefore.getTime()
      const ended = sql`select id from sign_ins where (revoked_at is not null and revoked_at < ${cutoff}) or expires_at < ${cutoff}`
      count(await sql`delete from refresh_tokens where sign_in_id in (${ended})`.execute(trx))
      count(await sql`delete from access_tokens where sign_in_id in (${ended})`.execute(trx))
      count(await sql`delete from sign_ins where id in (${ended})`.execute(trx))
      count(await sql`delete from used_subject_tokens where expires_at < ${now.getTime()}`.execute(trx))
      count(await sql`delete from rate_counters where window_start + window_ms < ${now.getTime()}`.execute(trx))
      return n
    })
  }
}

import type {
  AccessGrant,
  AuthorizationCodeRecord,
  ChangeResult,
  FoundToken,
  IssuedTokens,
  OAuthStore,
  RefreshTokenRecord,
  SignInRecord,
} from '@envkeep/env-api-plugin'
import { CompiledQuery, type Selectable } from 'kysely'
import { DONE } from './access-log-store.js'
import type { SqlDialect, SqlRunner } from './dialect.js'
import { all, first, run, type Step } from './op.js'
import { date, dateOrNull, num } from './rows.js'
import type { SignInsTable } from './schema.js'

/** last_used_at is written at most this often per sign-in */
const LAST_USE_GRANULARITY_MS = 60_000

/**
 * Where the two databases' OAuth tables differ (each one's migration 002, kept as it is):
 * SQLite stores scopes as space-separated text and a `created_at` on each token; PostgreSQL
 * stores scopes as a jsonb array and no token `created_at`. These two helpers are the only
 * places that know it.
 */
export const scopesColumn = (d: SqlDialect, scopes: readonly string[]): string => (d.name === 'postgres' ? JSON.stringify(scopes) : scopes.join(' '))
const tokenCreatedAt = (d: SqlDialect, at: Date): { created_at?: number } => (d.name === 'sqlite' ? { created_at: at.getTime() } : {})

/** Stored scopes: a jsonb array as parsed, or space-separated text. */
function scopesOf(v: unknown): readonly string[] {
  if (Array.isArray(v)) return Object.freeze(v as string[])
  const s = String(v)
  return Object.freeze(s === '' ? [] : s.split(' '))
}

type SignInRow = Selectable<SignInsTable>

/** A sign-ins row as the contract's record. */
export function toSignIn(r: SignInRow): SignInRecord {
  return Object.freeze({
    id: r.id,
    personId: r.person_id,
    clientId: r.client_id,
    resource: r.resource,
    scopes: scopesOf(r.scopes),
    createdAt: date(r.created_at),
    expiresAt: date(r.expires_at),
    lastUsedAt: dateOrNull(r.last_used_at),
    revokedAt: dateOrNull(r.revoked_at),
    label: r.label ?? null,
  })
}

/** The new sign-in's row (the CI store makes them too). */
export function signInRow(d: SqlDialect, s: Omit<SignInRecord, 'revokedAt' | 'lastUsedAt'>, codeHash: string | null, lastUsedAt: Date | null): SignInRow {
  return {
    id: s.id,
    person_id: s.personId,
    client_id: s.clientId,
    resource: s.resource,
    scopes: scopesColumn(d, s.scopes),
    code_hash: codeHash,
    created_at: s.createdAt.getTime(),
    expires_at: s.expiresAt.getTime(),
    last_used_at: lastUsedAt?.getTime() ?? null,
    revoked_at: null,
    label: s.label ?? null,
  }
}

/** Adds an access token to a sign-in. */
export function* insertAccessToken(d: SqlDialect, signInId: string, hash: string, expiresAt: Date, at: Date) {
  yield* run(d.db.insertInto('access_tokens').values({ token_hash: hash, sign_in_id: signInId, expires_at: expiresAt.getTime(), ...tokenCreatedAt(d, at) }))
}

function* insertTokens(d: SqlDialect, signInId: string, t: IssuedTokens, now: Date) {
  yield* insertAccessToken(d, signInId, t.accessTokenHash, t.accessExpiresAt, now)
  yield* run(d.db.insertInto('refresh_tokens').values({ token_hash: t.refreshTokenHash, sign_in_id: signInId, used_at: null, ...tokenCreatedAt(d, now) }))
}

/** Revokes the live sign-ins a filter selects; answers how many. */
function* revoke(d: SqlDialect, now: Date, where: { personId?: string; id?: string; codeHash?: string; clientId?: string }) {
  return yield* run(
    d.db
      .updateTable('sign_ins')
      .set({ revoked_at: now.getTime() })
      .where('revoked_at', 'is', null)
      .$if(where.personId !== undefined, (q) => q.where('person_id', '=', where.personId ?? ''))
      .$if(where.id !== undefined, (q) => q.where('id', '=', where.id ?? ''))
      .$if(where.codeHash !== undefined, (q) => q.where('code_hash', '=', where.codeHash ?? ''))
      .$if(where.clientId !== undefined, (q) => q.where('client_id', '=', where.clientId ?? '')),
  )
}

/** The OAuth store (oauth-store.ts in the plugin): tables oauth_codes, sign_ins, access_tokens, refresh_tokens. */
export function createOAuthStore(s: SqlRunner): OAuthStore {
  const d = s.dialect
  const { db } = d
  // The token check runs on every API request: its statement is compiled once, and only
  // its parameter changes (SQLite's runner prepares each text once).
  const findAccess = db
    .selectFrom('access_tokens as a')
    .innerJoin('sign_ins as s', 's.id', 'a.sign_in_id')
    .selectAll('s')
    .select('a.expires_at as token_expires_at')
    .where('a.token_hash', '=', '')
    .compile()
  const refreshWithSignIn = (hash: string) =>
    db.selectFrom('refresh_tokens as r').innerJoin('sign_ins as s', 's.id', 'r.sign_in_id').selectAll('s').select('r.used_at').where('r.token_hash', '=', hash)

  return {
    saveAuthorizationCode: (c: AuthorizationCodeRecord) =>
      s.write(function* () {
        yield* run(
          db.insertInto('oauth_codes').values({
            code_hash: c.codeHash,
            client_id: c.clientId,
            redirect_uri: c.redirectUri,
            code_challenge: c.codeChallenge,
            resource: c.resource,
            scopes: scopesColumn(d, c.scopes),
            person_id: c.personId,
            created_at: c.createdAt.getTime(),
            expires_at: c.expiresAt.getTime(),
            consumed_at: c.consumedAt?.getTime() ?? null,
          }),
        )
        return DONE
      }),

    findAuthorizationCode: (codeHash) =>
      s.read(function* () {
        const r = yield* first(db.selectFrom('oauth_codes').selectAll().where('code_hash', '=', codeHash))
        if (!r) return null
        return Object.freeze({
          codeHash: r.code_hash,
          clientId: r.client_id,
          redirectUri: r.redirect_uri,
          codeChallenge: r.code_challenge,
          resource: r.resource,
          scopes: scopesOf(r.scopes),
          personId: r.person_id,
          createdAt: date(r.created_at),
          expiresAt: date(r.expires_at),
          consumedAt: dateOrNull(r.consumed_at),
        }) satisfies AuthorizationCodeRecord
      }),

    exchangeAuthorizationCode: (codeHash, signIn, tokens, now) =>
      s.write(function* (): Generator<Step, ChangeResult<'replayed' | 'unknown', SignInRecord>, unknown> {
        const code = yield* first(
          db
            .selectFrom('oauth_codes')
            .select('consumed_at')
            .where('code_hash', '=', codeHash)
            .$if(d.rowLocks, (q) => q.forUpdate()),
        )
        if (!code) return { ok: false, reason: 'unknown' }
        if (code.consumed_at !== null) {
          yield* revoke(d, now, { codeHash })
          return { ok: false, reason: 'replayed' }
        }
        yield* run(db.updateTable('oauth_codes').set({ consumed_at: now.getTime() }).where('code_hash', '=', codeHash))
        const row = signInRow(d, { ...signIn, label: null }, codeHash, now)
        yield* run(db.insertInto('sign_ins').values(row))
        yield* insertTokens(d, signIn.id, tokens, now)
        return { ok: true, value: Object.freeze({ ...signIn, scopes: Object.freeze([...signIn.scopes]), lastUsedAt: now, revokedAt: null, label: null }) }
      }),

    rotateRefreshToken: (oldHash, tokens, now) =>
      s.write(function* (): Generator<Step, ChangeResult<'reused' | 'unknown', SignInRecord>, unknown> {
        const r = yield* first(refreshWithSignIn(oldHash).$if(d.rowLocks, (q) => q.forUpdate()))
        if (!r) return { ok: false, reason: 'unknown' }
        if (r.revoked_at !== null || now.getTime() >= num(r.expires_at)) return { ok: false, reason: 'unknown' }
        if (r.used_at !== null) {
          yield* revoke(d, now, { id: r.id })
          return { ok: false, reason: 'reused' }
        }
        yield* run(db.updateTable('refresh_tokens').set({ used_at: now.getTime() }).where('token_hash', '=', oldHash))
        yield* insertTokens(d, r.id, tokens, now)
        yield* run(db.updateTable('sign_ins').set({ last_used_at: now.getTime() }).where('id', '=', r.id))
        return { ok: true, value: toSignIn({ ...r, last_used_at: now.getTime() }) }
      }),

    /**
     * Every API request starts here: one indexed read (the token's primary key joined to its
     * sign-in), and at most once a minute per sign-in one update of its last use, outside a
     * transaction (a revocation is seen by the next request).
     */
    findToken: <K extends keyof FoundToken>(tokenHash: string, kind: K, now: Date, idleCutoff: Date) =>
      (kind === 'access' ? findAccessToken(tokenHash, now, idleCutoff) : findRefreshToken(tokenHash)) as Promise<FoundToken[K] | null>,

    listSignIns: (personId) =>
      s.read(function* () {
        const rows = yield* all(db.selectFrom('sign_ins').selectAll().where('person_id', '=', personId).orderBy('created_at', 'desc').orderBy(d.byBytes('id')))
        return rows.map(toSignIn)
      }),

    revokeSignIns: (filter, now) =>
      s.write(function* () {
        if (!('tokenHash' in filter)) return { ok: true as const, value: yield* revoke(d, now, { personId: filter.personId, id: filter.signInId }) }
        const owner =
          (yield* first(db.selectFrom('access_tokens').select('sign_in_id').where('token_hash', '=', filter.tokenHash))) ??
          (yield* first(db.selectFrom('refresh_tokens').select('sign_in_id').where('token_hash', '=', filter.tokenHash)))
        return { ok: true as const, value: owner ? yield* revoke(d, now, { id: owner.sign_in_id, clientId: filter.clientId }) : 0 }
      }),
  }

  function findRefreshToken(tokenHash: string): Promise<RefreshTokenRecord | null> {
    return s.read(function* () {
      const r = yield* first(refreshWithSignIn(tokenHash))
      if (!r) return null
      return Object.freeze({ tokenHash, signIn: toSignIn(r), usedAt: dateOrNull(r.used_at) }) satisfies RefreshTokenRecord
    })
  }

  function findAccessToken(tokenHash: string, now: Date, idleCutoff: Date): Promise<AccessGrant | null> {
    return s.read(function* () {
      const rows = yield* all({ compile: () => CompiledQuery.raw(findAccess.sql, [tokenHash]) as CompiledQuery<SignInRow & { token_expires_at: number }> })
      const r = rows[0]
      if (!r) return null
      const t = now.getTime()
      const lastUsed = r.last_used_at === null ? null : num(r.last_used_at)
      if (r.revoked_at !== null || t >= num(r.token_expires_at) || t >= num(r.expires_at)) return null
      if ((lastUsed ?? num(r.created_at)) < idleCutoff.getTime()) return null
      let row = r
      if (lastUsed === null || t - lastUsed >= LAST_USE_GRANULARITY_MS) {
        yield* run(
          db
            .updateTable('sign_ins')
            .set({ last_used_at: t })
            .where('id', '=', r.id)
            .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', t)])),
        )
        row = { ...r, last_used_at: t }
      }
      return Object.freeze({ signIn: toSignIn(row), tokenExpiresAt: date(r.token_expires_at) }) satisfies AccessGrant
    })
  }
}

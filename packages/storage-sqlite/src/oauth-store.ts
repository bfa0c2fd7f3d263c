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
import type { Statement } from 'better-sqlite3'
import type { Kysely, Selectable, Transaction } from 'kysely'
import type { OpenDatabase } from './database.js'
import type { DB, SignInsTable } from './schema.js'
import { runSync, wrapStorage } from './sqlite-errors.js'

const FIND_ACCESS_TOKEN_SQL =
  'select "s"."id", "s"."person_id", "s"."client_id", "s"."resource", "s"."scopes", "s"."code_hash", "s"."created_at", "s"."expires_at", "s"."last_used_at", "s"."revoked_at", "s"."label", "a"."expires_at" as "token_expires_at" from "access_tokens" as "a" inner join "sign_ins" as "s" on "s"."id" = "a"."sign_in_id" where "a"."token_hash" = ?'
const TOUCH_SIGN_IN_SQL = 'update "sign_ins" set "last_used_at" = ? where "id" = ?'

/** last_used_at is written at most this often per sign-in */
const LAST_USE_GRANULARITY_MS = 60_000

const ms = (d: Date): number => d.getTime()
const date = (n: number): Date => new Date(n)
const splitScopes = (s: string): string[] => (s === '' ? [] : s.split(' '))

function toSignIn(row: Selectable<SignInsTable>): SignInRecord {
  return Object.freeze({
    id: row.id,
    personId: row.person_id,
    clientId: row.client_id,
    resource: row.resource,
    scopes: Object.freeze(splitScopes(row.scopes)),
    createdAt: date(row.created_at),
    expiresAt: date(row.expires_at),
    lastUsedAt: row.last_used_at === null ? null : date(row.last_used_at),
    revokedAt: row.revoked_at === null ? null : date(row.revoked_at),
    label: row.label ?? null,
  })
}

/**
 * The OAuth half of the storage adapter on SQLite. Every operation that must
 * be atomic runs in one transaction; kysely's SQLite driver holds its single
 * connection for the whole transaction, so concurrent callers are serialised.
 */
class SqliteOAuthStore implements OAuthStore {
  readonly #db: Kysely<DB>
  readonly #d: OpenDatabase
  #findAccess: Statement | undefined
  #touchSignIn: Statement | undefined

  constructor(d: OpenDatabase) {
    this.#db = d.db
    this.#d = d
  }

  async saveAuthorizationCode(code: AuthorizationCodeRecord): Promise<void> {
    await this.#db
      .insertInto('oauth_codes')
      .values({
        code_hash: code.codeHash,
        client_id: code.clientId,
        redirect_uri: code.redirectUri,
        code_challenge: code.codeChallenge,
        resource: code.resource,
        scopes: code.scopes.join(' '),
        person_id: code.personId,
        created_at: ms(code.createdAt),
        expires_at: ms(code.expiresAt),
        consumed_at: code.consumedAt === null ? null : ms(code.consumedAt),
      })
      .execute()
  }

  async findAuthorizationCode(codeHash: string): Promise<AuthorizationCodeRecord | null> {
    const row = await this.#db.selectFrom('oauth_codes').selectAll().where('code_hash', '=', codeHash).executeTakeFirst()
    if (!row) return null
    return Object.freeze({
      codeHash: row.code_hash,
      clientId: row.client_id,
      redirectUri: row.redirect_uri,
      codeChallenge: row.code_challenge,
      resource: row.resource,
      scopes: Object.freeze(splitScopes(row.scopes)),
      personId: row.person_id,
      createdAt: date(row.created_at),
      expiresAt: date(row.expires_at),
      consumedAt: row.consumed_at === null ? null : date(row.consumed_at),
    })
  }

  async exchangeAuthorizationCode(
    codeHash: string,
    signIn: Omit<SignInRecord, 'lastUsedAt' | 'revokedAt'>,
    tokens: IssuedTokens,
    now: Date,
  ): Promise<ExchangeCodeResult> {
    return this.#db.transaction().execute(async (trx): Promise<ExchangeCodeResult> => {
      const consumed = await trx
        .updateTable('oauth_codes')
        .set({ consumed_at: ms(now) })
        .where('code_hash', '=', codeHash)
        .where('consumed_at', 'is', null)
        .returning('code_hash')
        .executeTakeFirst()
      if (!consumed) {
        const known = await trx.selectFrom('oauth_codes').select('code_hash').where('code_hash', '=', codeHash).executeTakeFirst()
        if (!known) return { outcome: 'unknown' }
        await trx
          .updateTable('sign_ins')
          .set({ revoked_at: ms(now) })
          .where('code_hash', '=', codeHash)
          .where('revoked_at', 'is', null)
          .execute()
        return { outcome: 'replayed' }
      }
      const row = {
        id: signIn.id,
        person_id: signIn.personId,
        client_id: signIn.clientId,
        resource: signIn.resource,
        scopes: signIn.scopes.join(' '),
        code_hash: codeHash,
        created_at: ms(signIn.createdAt),
        expires_at: ms(signIn.expiresAt),
        last_used_at: ms(now),
        revoked_at: null,
        label: null,
      }
      await trx.insertInto('sign_ins').values(row).execute()
      await insertTokens(trx, signIn.id, tokens, now)
      return { outcome: 'issued', signIn: toSignIn(row) }
    })
  }

  async findRefreshToken(tokenHash: string): Promise<RefreshTokenRecord | null> {
    const row = await this.#db
      .selectFrom('refresh_tokens as r')
      .innerJoin('sign_ins as s', 's.id', 'r.sign_in_id')
      .selectAll('s')
      .select(['r.token_hash', 'r.used_at'])
      .where('r.token_hash', '=', tokenHash)
      .executeTakeFirst()
    if (!row) return null
    return Object.freeze({
      tokenHash: row.token_hash,
      signIn: toSignIn(row),
      usedAt: row.used_at === null ? null : date(row.used_at),
    })
  }

  async rotateRefreshToken(oldHash: string, tokens: IssuedTokens, now: Date): Promise<RotateRefreshResult> {
    return this.#db.transaction().execute(async (trx): Promise<RotateRefreshResult> => {
      const row = await trx
        .selectFrom('refresh_tokens as r')
        .innerJoin('sign_ins as s', 's.id', 'r.sign_in_id')
        .selectAll('s')
        .select(['r.used_at'])
        .where('r.token_hash', '=', oldHash)
        .executeTakeFirst()
      if (!row) return { outcome: 'unknown' }
      if (row.revoked_at !== null || ms(now) >= row.expires_at) return { outcome: 'unknown' }
      const used = await trx
        .updateTable('refresh_tokens')
        .set({ used_at: ms(now) })
        .where('token_hash', '=', oldHash)
        .where('used_at', 'is', null)
        .returning('token_hash')
        .executeTakeFirst()
      if (!used) {
        await trx
          .updateTable('sign_ins')
          .set({ revoked_at: ms(now) })
          .where('id', '=', row.id)
          .where('revoked_at', 'is', null)
          .execute()
        return { outcome: 'reused' }
      }
      await insertTokens(trx, row.id, tokens, now)
      await trx
        .updateTable('sign_ins')
        .set({ last_used_at: ms(now) })
        .where('id', '=', row.id)
        .execute()
      return { outcome: 'rotated', signIn: toSignIn({ ...row, last_used_at: ms(now) }) }
    })
  }

  async revokeByToken(tokenHash: string, clientId: string, now: Date): Promise<boolean> {
    return this.#db.transaction().execute(async (trx) => {
      const owner =
        (await trx.selectFrom('access_tokens').select('sign_in_id').where('token_hash', '=', tokenHash).executeTakeFirst()) ??
        (await trx.selectFrom('refresh_tokens').select('sign_in_id').where('token_hash', '=', tokenHash).executeTakeFirst())
      if (!owner) return false
      const res = await trx
        .updateTable('sign_ins')
        .set({ revoked_at: ms(now) })
        .where('id', '=', owner.sign_in_id)
        .where('client_id', '=', clientId)
        .where('revoked_at', 'is', null)
        .executeTakeFirst()
      return res.numUpdatedRows > 0n
    })
  }

  /**
   * Every API request starts here, so it runs hand-written statements
   * prepared once (kysely compiles and prepares per call), synchronously on
   * the shared connection through `runSync` (which waits for an open kysely
   * transaction). Still one database read per request: a revocation is seen
   * by the next request.
   */
  findAccessToken(tokenHash: string, now: Date, idleCutoff: Date): Promise<AccessGrant | null> {
    return runSync(
      this.#d,
      'none',
      (): AccessGrant | null => {
        this.#findAccess ??= this.#d.sqlite.prepare(FIND_ACCESS_TOKEN_SQL)
        const row = this.#findAccess.get(tokenHash) as (Selectable<SignInsTable> & { token_expires_at: number }) | undefined
        if (!row) return null
        const t = ms(now)
        if (row.revoked_at !== null || t >= row.token_expires_at || t >= row.expires_at) return null
        const lastUse = row.last_used_at ?? row.created_at
        if (lastUse < ms(idleCutoff)) return null
        let signInRow: Selectable<SignInsTable> = row
        if (row.last_used_at === null || t - row.last_used_at >= LAST_USE_GRANULARITY_MS) {
          this.#touchSignIn ??= this.#d.sqlite.prepare(TOUCH_SIGN_IN_SQL)
          this.#touchSignIn.run(t, row.id)
          signInRow = { ...row, last_used_at: t }
        }
        return Object.freeze({ signIn: toSignIn(signInRow), tokenExpiresAt: date(row.token_expires_at) })
      },
      'access_tokens',
    )
  }

  async listSignIns(personId: string): Promise<SignInRecord[]> {
    const rows = await this.#db.selectFrom('sign_ins').selectAll().where('person_id', '=', personId).orderBy('created_at', 'desc').orderBy('id').execute()
    return rows.map(toSignIn)
  }

  async purgeExpired(now: Date, codesBefore: Date, signInsBefore: Date): Promise<number> {
    return this.#db.transaction().execute(async (trx) => {
      const codes = await trx.deleteFrom('oauth_codes').where('expires_at', '<', ms(codesBefore)).executeTakeFirst()
      const access = await trx.deleteFrom('access_tokens').where('expires_at', '<', ms(now)).executeTakeFirst()
      const ended = trx
        .selectFrom('sign_ins')
        .select('id')
        .where((eb) => eb.or([eb('revoked_at', '<', ms(signInsBefore)), eb('expires_at', '<', ms(signInsBefore))]))
      // tokens first: the foreign keys' cascade is not relied on (foreign_keys may be off on a copy)
      const refresh = await trx.deleteFrom('refresh_tokens').where('sign_in_id', 'in', ended).executeTakeFirst()
      const access2 = await trx.deleteFrom('access_tokens').where('sign_in_id', 'in', ended).executeTakeFirst()
      const signIns = await trx
        .deleteFrom('sign_ins')
        .where((eb) => eb.or([eb('revoked_at', '<', ms(signInsBefore)), eb('expires_at', '<', ms(signInsBefore))]))
        .executeTakeFirst()
      const subjectTokens = await trx.deleteFrom('used_subject_tokens').where('expires_at', '<', ms(now)).executeTakeFirst()
      return [codes, access, refresh, access2, signIns, subjectTokens].reduce((n, r) => n + Number(r.numDeletedRows), 0)
    })
  }

  async revokeSignIns(input: { readonly personId: string; readonly signInId?: string }, now: Date): Promise<number> {
    let q = this.#db
      .updateTable('sign_ins')
      .set({ revoked_at: ms(now) })
      .where('person_id', '=', input.personId)
      .where('revoked_at', 'is', null)
    if (input.signInId !== undefined) q = q.where('id', '=', input.signInId)
    return Number((await q.executeTakeFirst()).numUpdatedRows)
  }
}

async function insertTokens(trx: Transaction<DB>, signInId: string, tokens: IssuedTokens, now: Date): Promise<void> {
  await trx
    .insertInto('access_tokens')
    .values({ token_hash: tokens.accessTokenHash, sign_in_id: signInId, created_at: ms(now), expires_at: ms(tokens.accessExpiresAt) })
    .execute()
  await trx
    .insertInto('refresh_tokens')
    .values({ token_hash: tokens.refreshTokenHash, sign_in_id: signInId, created_at: ms(now), used_at: null })
    .execute()
}

/**
 * The OAuth store over an open database (see storage.ts for the combined
 * adapter). Database failures surface as StorageError (sqlite-errors.ts).
 */
export function createSqliteOAuthStore(d: OpenDatabase): OAuthStore {
  const s = new SqliteOAuthStore(d)
  return {
    saveAuthorizationCode: (code) => wrapStorage(() => s.saveAuthorizationCode(code), 'oauth_codes'),
    findAuthorizationCode: (h) => wrapStorage(() => s.findAuthorizationCode(h), 'oauth_codes'),
    exchangeAuthorizationCode: (h, signIn, tokens, now) => wrapStorage(() => s.exchangeAuthorizationCode(h, signIn, tokens, now), 'oauth_codes'),
    findRefreshToken: (h) => wrapStorage(() => s.findRefreshToken(h), 'refresh_tokens'),
    rotateRefreshToken: (h, tokens, now) => wrapStorage(() => s.rotateRefreshToken(h, tokens, now), 'refresh_tokens'),
    revokeByToken: (h, clientId, now) => wrapStorage(() => s.revokeByToken(h, clientId, now), 'sign_ins'),
    findAccessToken: (h, now, idleCutoff) => wrapStorage(() => s.findAccessToken(h, now, idleCutoff), 'access_tokens'),
    listSignIns: (personId) => wrapStorage(() => s.listSignIns(personId), 'sign_ins'),
    revokeSignIns: (input, now) => wrapStorage(() => s.revokeSignIns(input, now), 'sign_ins'),
    purgeExpired: (now, codesBefore, signInsBefore) => wrapStorage(() => s.purgeExpired(now, codesBefore, signInsBefore), 'sign_ins'),
  }
}

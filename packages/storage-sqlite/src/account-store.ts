import { StorageError } from '@envkeep/env-api-plugin'
import type { OpenDatabase } from './database.js'

/** A local account of the self-hosting server. */
export interface AccountRecord {
  readonly id: string
  readonly email: string
  readonly name: string
  /** argon2id PHC string; never logged, never shown */
  readonly passwordHash: string
  readonly createdAt: Date
}

export interface NewAccount {
  readonly id: string
  readonly email: string
  readonly name: string
  readonly passwordHash: string
}

export interface WebSession {
  readonly account: AccountRecord
  readonly createdAt: Date
  readonly expiresAt: Date
}

/**
 * Local accounts, web sessions and the one-time setup token of the
 * self-hosting server. Same rules as the plugin's storage contract: all
 * async, absent → null, what must be atomic is one method. Tokens arrive
 * here only as SHA-256 hex hashes. Emails are unique case-insensitively.
 */
export interface AccountStore {
  /** Creates an account. A taken email throws StorageError 23505 (accounts.email). */
  createAccount(account: NewAccount, now: Date): Promise<AccountRecord>
  /**
   * Atomically: consumes the live setup token `tokenHash` (deleted, so it
   * works once) and creates the first account. `null` when the token is
   * unknown, expired or used, or when an account exists already (nothing changes then).
   */
  createFirstAccount(tokenHash: string, account: NewAccount, now: Date): Promise<AccountRecord | null>
  getAccount(id: string): Promise<AccountRecord | null>
  /** Case-insensitive. */
  findAccountByEmail(email: string): Promise<AccountRecord | null>
  /** Every account, by email. */
  listAccounts(): Promise<AccountRecord[]>
  countAccounts(): Promise<number>
  /** Replaces the password hash; false when there is no such account. */
  setPasswordHash(accountId: string, passwordHash: string): Promise<boolean>

  /** Replaces any setup token with this one (only the newest link works). */
  replaceSetupToken(tokenHash: string, now: Date, expiresAt: Date): Promise<void>
  /** Whether a setup token is live (known and `now < expiresAt`). Never consumes. */
  isSetupTokenLive(tokenHash: string, now: Date): Promise<boolean>
  /** Removes every setup token (once an account exists). */
  clearSetupTokens(): Promise<void>

  createSession(tokenHash: string, accountId: string, now: Date, expiresAt: Date): Promise<void>
  /** The live session (`now < expiresAt`) with its account, or null. */
  findSession(tokenHash: string, now: Date): Promise<WebSession | null>
  /** Ends one session; false when absent. */
  deleteSession(tokenHash: string): Promise<boolean>
  /** Ends every session of an account; returns how many. */
  deleteSessionsOf(accountId: string): Promise<number>
  /** Deletes sessions and setup tokens past their end; returns how many sessions. */
  deleteExpired(now: Date): Promise<number>
}

interface AccountRow {
  id: string
  email: string
  name: string
  password_hash: string
  created_at: number
}

function toAccount(r: AccountRow): AccountRecord {
  return { id: r.id, email: r.email, name: r.name, passwordHash: r.password_hash, createdAt: new Date(r.created_at) }
}

const ms = (d: Date): number => d.getTime()

/** SQLite failures in the spec's SQLSTATE vocabulary; never a row's values. */
function toStorageError(err: unknown, detail: string): unknown {
  if (err instanceof StorageError) return err
  const code = String((err as { code?: unknown } | null)?.code ?? '')
  if (code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY')
    return new StorageError('23505', detail, { cause: err })
  if (code === 'SQLITE_CONSTRAINT_FOREIGNKEY') return new StorageError('23503', detail, { cause: err })
  if (code.startsWith('SQLITE_CONSTRAINT')) return new StorageError('23514', detail, { cause: err })
  if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) return new StorageError('55P03', detail, { cause: err })
  if (code === 'SQLITE_INTERRUPT') return new StorageError('57014', detail, { cause: err })
  if (code.startsWith('SQLITE_')) return new StorageError('XX000', detail, { cause: err })
  return err
}

async function guard<T>(detail: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work()
  } catch (err) {
    throw toStorageError(err, detail)
  }
}

/** The account store over the storage's open database (tables of migration 003_accounts). */
export function createSqliteAccountStore(database: OpenDatabase): AccountStore {
  const { db } = database
  return {
    createAccount: (a, now) =>
      guard('accounts.email', async () => {
        const row = { id: a.id, email: a.email, name: a.name, password_hash: a.passwordHash, created_at: ms(now) }
        await db.insertInto('accounts').values(row).execute()
        return toAccount(row)
      }),

    createFirstAccount: (tokenHash, a, now) =>
      guard('accounts', () =>
        db.transaction().execute(async (trx) => {
          // Delete first: the transaction takes the write lock at once (no
          // read-then-upgrade), and a token works exactly once.
          const token = await trx
            .deleteFrom('setup_tokens')
            .where('token_hash', '=', tokenHash)
            .returning(['expires_at'])
            .executeTakeFirst()
          if (!token || token.expires_at <= ms(now)) return null
          const existing = await trx.selectFrom('accounts').select('id').limit(1).executeTakeFirst()
          if (existing) return null
          const row = { id: a.id, email: a.email, name: a.name, password_hash: a.passwordHash, created_at: ms(now) }
          await trx.insertInto('accounts').values(row).execute()
          await trx.deleteFrom('setup_tokens').execute()
          return toAccount(row)
        }),
      ),

    getAccount: (id) =>
      guard('accounts', async () => {
        const r = await db.selectFrom('accounts').selectAll().where('id', '=', id).executeTakeFirst()
        return r ? toAccount(r) : null
      }),

    findAccountByEmail: (email) =>
      guard('accounts', async () => {
        // the column collates nocase, so `=` compares case-insensitively
        const r = await db.selectFrom('accounts').selectAll().where('email', '=', email).executeTakeFirst()
        return r ? toAccount(r) : null
      }),

    listAccounts: () =>
      guard('accounts', async () => {
        const rows = await db.selectFrom('accounts').selectAll().orderBy('email').execute()
        return rows.map(toAccount)
      }),

    countAccounts: () =>
      guard('accounts', async () => {
        const r = await db
          .selectFrom('accounts')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow()
        return Number(r.n)
      }),

    setPasswordHash: (accountId, passwordHash) =>
      guard('accounts', async () => {
        const r = await db
          .updateTable('accounts')
          .set({ password_hash: passwordHash })
          .where('id', '=', accountId)
          .executeTakeFirst()
        return Number(r.numUpdatedRows) > 0
      }),

    replaceSetupToken: (tokenHash, now, expiresAt) =>
      guard('setup_tokens', () =>
        db.transaction().execute(async (trx) => {
          await trx.deleteFrom('setup_tokens').execute()
          await trx
            .insertInto('setup_tokens')
            .values({ token_hash: tokenHash, created_at: ms(now), expires_at: ms(expiresAt) })
            .execute()
        }),
      ),

    isSetupTokenLive: (tokenHash, now) =>
      guard('setup_tokens', async () => {
        const r = await db
          .selectFrom('setup_tokens')
          .select('token_hash')
          .where('token_hash', '=', tokenHash)
          .where('expires_at', '>', ms(now))
          .executeTakeFirst()
        return r !== undefined
      }),

    clearSetupTokens: () =>
      guard('setup_tokens', async () => {
        await db.deleteFrom('setup_tokens').execute()
      }),

    createSession: (tokenHash, accountId, now, expiresAt) =>
      guard('web_sessions', async () => {
        await db
          .insertInto('web_sessions')
          .values({ token_hash: tokenHash, account_id: accountId, created_at: ms(now), expires_at: ms(expiresAt) })
          .execute()
      }),

    findSession: (tokenHash, now) =>
      guard('web_sessions', async () => {
        const r = await db
          .selectFrom('web_sessions as s')
          .innerJoin('accounts as a', 'a.id', 's.account_id')
          .select([
            'a.id',
            'a.email',
            'a.name',
            'a.password_hash',
            'a.created_at',
            's.created_at as session_created_at',
            's.expires_at as session_expires_at',
          ])
          .where('s.token_hash', '=', tokenHash)
          .where('s.expires_at', '>', ms(now))
          .executeTakeFirst()
        if (!r) return null
        return {
          account: toAccount(r),
          createdAt: new Date(r.session_created_at),
          expiresAt: new Date(r.session_expires_at),
        }
      }),

    deleteSession: (tokenHash) =>
      guard('web_sessions', async () => {
        const r = await db.deleteFrom('web_sessions').where('token_hash', '=', tokenHash).executeTakeFirst()
        return Number(r.numDeletedRows) > 0
      }),

    deleteSessionsOf: (accountId) =>
      guard('web_sessions', async () => {
        const r = await db.deleteFrom('web_sessions').where('account_id', '=', accountId).executeTakeFirst()
        return Number(r.numDeletedRows)
      }),

    deleteExpired: (now) =>
      guard('web_sessions', async () => {
        await db.deleteFrom('setup_tokens').where('expires_at', '<=', ms(now)).execute()
        const r = await db.deleteFrom('web_sessions').where('expires_at', '<=', ms(now)).executeTakeFirst()
        return Number(r.numDeletedRows)
      }),
  }
}

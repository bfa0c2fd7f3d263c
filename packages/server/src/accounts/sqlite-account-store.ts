import { StorageError } from '@envkeep/env-api-plugin'
import type { OpenDatabase } from '@envkeep/storage-sqlite'
import type { Kysely } from 'kysely'
import type { AccountRecord, AccountStore } from './account-store.js'
import { migrateAccounts, type AccountsDB } from './migrations/sqlite.js'
import { sqliteInvitations } from './sqlite-invitations.js'
import { sqlFactorStore } from './factor-store.js'
import { sqlIdentityStore } from './identity-store.js'

interface AccountRow {
  id: string
  email: string
  name: string
  password_hash: string
  created_at: number
  email_confirmed: number
}

function toAccount(r: AccountRow): AccountRecord {
  return { id: r.id, email: r.email, name: r.name, passwordHash: r.password_hash, createdAt: new Date(r.created_at), emailConfirmed: r.email_confirmed === 1 }
}

const ms = (d: Date): number => d.getTime()

/** SQLite failures in the spec's SQLSTATE vocabulary; never a row's values. */
function toStorageError(err: unknown, detail: string): unknown {
  if (err instanceof StorageError) return err
  const code = String((err as { code?: unknown } | null)?.code ?? '')
  if (code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY') return new StorageError('23505', detail, { cause: err })
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

/**
 * The account store on the storage's open SQLite database (one file, one
 * connection): runs the server's own migrations first (see
 * migrations/sqlite.ts), then answers on the same connection.
 */
export async function createSqliteAccountStore(database: OpenDatabase): Promise<AccountStore> {
  const db = database.db as unknown as Kysely<AccountsDB>
  await migrateAccounts(database.db as unknown as Kysely<unknown>)
  return {
    ...sqliteInvitations(db, guard),
    ...sqlFactorStore(database.db as unknown as Kysely<unknown>, guard),
    ...sqlIdentityStore(database.db as unknown as Kysely<unknown>, guard),
    createAccount: (a, now) =>
      guard('accounts.email', async () => {
        const row = {
          id: a.id,
          email: a.email,
          name: a.name,
          password_hash: a.passwordHash,
          created_at: ms(now),
          email_confirmed: a.emailConfirmed === false ? 0 : 1,
        }
        await db.insertInto('accounts').values(row).execute()
        return toAccount(row)
      }),

    createFirstAccount: (tokenHash, a, now) =>
      guard('accounts', () =>
        db.transaction().execute(async (trx) => {
          // Delete first: the transaction takes the write lock at once (no
          // read-then-upgrade), and a token works exactly once.
          const token = await trx.deleteFrom('setup_tokens').where('token_hash', '=', tokenHash).returning(['expires_at']).executeTakeFirst()
          if (!token || token.expires_at <= ms(now)) return null
          const existing = await trx.selectFrom('accounts').select('id').limit(1).executeTakeFirst()
          if (existing) return null
          const row = { id: a.id, email: a.email, name: a.name, password_hash: a.passwordHash, created_at: ms(now), email_confirmed: 1 }
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
        const r = await db.updateTable('accounts').set({ password_hash: passwordHash }).where('id', '=', accountId).executeTakeFirst()
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
            'a.email_confirmed',
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
        await db.deleteFrom('invitations').where('expires_at', '<=', ms(now)).execute()
        const r = await db.deleteFrom('web_sessions').where('expires_at', '<=', ms(now)).executeTakeFirst()
        return Number(r.numDeletedRows)
      }),
  }
}

import { inTransaction, toStorageError, type OpenPostgres } from '@envkeep/storage-postgres'
import { sql } from 'kysely'
import type { AccountRecord, AccountStore } from './account-store.js'
import { migrateAccountsPostgres } from './migrations/postgres.js'
import { postgresInvitations } from './postgres-invitations.js'
import { sqlFactorStore } from './factor-store.js'
import { sqlIdentityStore } from './identity-store.js'

interface AccountRow {
  id: string
  email: string
  name: string
  password_hash: string
  created_at: string
  email_confirmed: boolean
}

function toAccount(r: AccountRow): AccountRecord {
  return { id: r.id, email: r.email, name: r.name, passwordHash: r.password_hash, createdAt: new Date(Number(r.created_at)), emailConfirmed: r.email_confirmed }
}

async function guard<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work()
  } catch (err) {
    throw toStorageError(err)
  }
}

/**
 * The account store on the storage's PostgreSQL pool, with the server's own migrations.
 * Sessions and setup tokens live in the database, so every process sees them.
 */
export async function createPostgresAccountStore(database: OpenPostgres, schema?: string): Promise<AccountStore> {
  const db = database.db
  await guard(() => migrateAccountsPostgres(db, schema))
  const rows = async <T>(q: ReturnType<typeof sql>): Promise<T[]> => (await q.execute(db)).rows as T[]
  return {
    ...postgresInvitations(db),
    ...sqlFactorStore(db, (_detail, work) => guard(work)),
    ...sqlIdentityStore(db, (_detail, work) => guard(work)),
    createAccount: (a, now) =>
      guard(async () => {
        const [r] = await rows<AccountRow>(
          sql`insert into accounts (id, email, name, password_hash, created_at, email_confirmed)
            values (${a.id}, ${a.email}, ${a.name}, ${a.passwordHash}, ${now.getTime()}, ${a.emailConfirmed !== false}) returning *`,
        )
        return toAccount(r!)
      }),
    createFirstAccount: (tokenHash, a, now) =>
      inTransaction(db, async (trx) => {
        // the token row is deleted (and so locked) first: it works exactly once, on any process
        const token = (await sql`delete from setup_tokens where token_hash = ${tokenHash} returning expires_at`.execute(trx)).rows[0] as
          | { expires_at: string }
          | undefined
        if (!token || Number(token.expires_at) <= now.getTime()) return null
        if ((await sql`select 1 from accounts limit 1`.execute(trx)).rows.length > 0) return null
        const r = (
          await sql`insert into accounts (id, email, name, password_hash, created_at) values (${a.id}, ${a.email}, ${a.name}, ${a.passwordHash}, ${now.getTime()}) returning *`.execute(
            trx,
          )
        ).rows[0] as AccountRow
        await sql`delete from setup_tokens`.execute(trx)
        return toAccount(r)
      }),
    getAccount: (id) => guard(async () => (await rows<AccountRow>(sql`select * from accounts where id = ${id}`)).map(toAccount)[0] ?? null),
    findAccountByEmail: (email) =>
      guard(async () => (await rows<AccountRow>(sql`select * from accounts where lower(email) = lower(${email})`)).map(toAccount)[0] ?? null),
    listAccounts: () => guard(async () => (await rows<AccountRow>(sql`select * from accounts order by lower(email)`)).map(toAccount)),
    countAccounts: () => guard(async () => Number((await rows<{ n: string }>(sql`select count(*) as n from accounts`))[0]!.n)),
    setPasswordHash: (accountId, passwordHash) =>
      guard(async () => Number((await sql`update accounts set password_hash = ${passwordHash} where id = ${accountId}`.execute(db)).numAffectedRows ?? 0) > 0),
    replaceSetupToken: (tokenHash, now, expiresAt) =>
      inTransaction(db, async (trx) => {
        await sql`delete from setup_tokens`.execute(trx)
        await sql`insert into setup_tokens (token_hash, created_at, expires_at) values (${tokenHash}, ${now.getTime()}, ${expiresAt.getTime()})`.execute(trx)
      }),
    isSetupTokenLive: (tokenHash, now) =>
      guard(async () => (await rows(sql`select 1 from setup_tokens where token_hash = ${tokenHash} and expires_at > ${now.getTime()}`)).length > 0),
    clearSetupTokens: () =>
      guard(async () => {
        await sql`delete from setup_tokens`.execute(db)
      }),
    createSession: (tokenHash, accountId, now, expiresAt) =>
      guard(async () => {
        await sql`insert into web_sessions (token_hash, account_id, created_at, expires_at) values (${tokenHash}, ${accountId}, ${now.getTime()}, ${expiresAt.getTime()})`.execute(
          db,
        )
      }),
    findSession: (tokenHash, now) =>
      guard(async () => {
        const [r] = await rows<AccountRow & { session_created_at: string; session_expires_at: string }>(
          sql`select a.*, s.created_at as session_created_at, s.expires_at as session_expires_at from web_sessions s join accounts a on a.id = s.account_id
            where s.token_hash = ${tokenHash} and s.expires_at > ${now.getTime()}`,
        )
        return r ? { account: toAccount(r), createdAt: new Date(Number(r.session_created_at)), expiresAt: new Date(Number(r.session_expires_at)) } : null
      }),
    deleteSession: (tokenHash) =>
      guard(async () => Number((await sql`delete from web_sessions where token_hash = ${tokenHash}`.execute(db)).numAffectedRows ?? 0) > 0),
    deleteSessionsOf: (accountId) =>
      guard(async () => Number((await sql`delete from web_sessions where account_id = ${accountId}`.execute(db)).numAffectedRows ?? 0)),
    deleteExpired: (now) =>
      guard(async () => {
        await sql`delete from setup_tokens where expires_at <= ${now.getTime()}`.execute(db)
        await sql`delete from invitations where expires_at <= ${now.getTime()}`.execute(db)
        return Number((await sql`delete from web_sessions where expires_at <= ${now.getTime()}`.execute(db)).numAffectedRows ?? 0)
      }),
  }
}

import { StorageError, type Role } from '@envkeep/env-api-plugin'
import type { Kysely } from 'kysely'
import type { AccountRecord } from './account-store.js'
import type { InvitationRecord, InvitationStore } from './invitation-store.js'
import type { AccountsDB } from './migrations/sqlite.js'

type InvitationRow = AccountsDB['invitations']

function toInvitation(r: InvitationRow): InvitationRecord {
  return {
    id: r.id,
    vaultId: r.vault_id,
    email: r.email,
    role: r.role as Role,
    invitedBy: r.invited_by,
    createdAt: new Date(r.created_at),
    expiresAt: new Date(r.expires_at),
    provesEmail: r.proves_email === 1,
  }
}

const COLUMNS = ['id', 'vault_id', 'email', 'role', 'invited_by', 'created_at', 'expires_at', 'token_hash', 'proves_email'] as const

/** Thrown inside acceptInvitation's transaction to roll it back (the email has an account). */
class EmailTaken extends Error {}

/**
 * The invitation half of the SQLite account store; `guard` maps SQLite failures to
 * StorageError as the rest of the store does.
 */
export function sqliteInvitations(db: Kysely<AccountsDB>, guard: <T>(detail: string, work: () => Promise<T>) => Promise<T>): InvitationStore {
  return {
    createInvitation: (inv) =>
      guard('invitations', () =>
        db.transaction().execute(async (trx) => {
          await trx.deleteFrom('invitations').where('vault_id', '=', inv.vaultId).where('email', '=', inv.email).execute()
          const row: InvitationRow = {
            id: inv.id,
            token_hash: inv.tokenHash,
            vault_id: inv.vaultId,
            email: inv.email,
            role: inv.role,
            invited_by: inv.invitedBy,
            created_at: inv.createdAt.getTime(),
            expires_at: inv.expiresAt.getTime(),
            proves_email: inv.provesEmail ? 1 : 0,
          }
          await trx.insertInto('invitations').values(row).execute()
          return toInvitation(row)
        }),
      ),

    findInvitation: (tokenHash, now) =>
      guard('invitations', async () => {
        const r = await db
          .selectFrom('invitations')
          .select(COLUMNS)
          .where('token_hash', '=', tokenHash)
          .where('expires_at', '>', now.getTime())
          .executeTakeFirst()
        return r ? toInvitation(r) : null
      }),

    listInvitations: (vaultId, now) =>
      guard('invitations', async () => {
        const rows = await db
          .selectFrom('invitations')
          .select(COLUMNS)
          .where('vault_id', '=', vaultId)
          .where('expires_at', '>', now.getTime())
          .orderBy('created_at')
          .orderBy('id')
          .execute()
        return rows.map(toInvitation)
      }),

    revokeInvitation: (vaultId, id) =>
      guard('invitations', async () => {
        const r = await db.deleteFrom('invitations').where('vault_id', '=', vaultId).where('id', '=', id).executeTakeFirst()
        return Number(r.numDeletedRows) > 0
      }),

    acceptInvitation: async (tokenHash, a, now) => {
      try {
        return await guard('invitations', () =>
          db.transaction().execute(async (trx) => {
            // delete first: the write lock is taken at once, and the link works exactly once
            const inv = await trx.deleteFrom('invitations').where('token_hash', '=', tokenHash).returning(COLUMNS).executeTakeFirst()
            if (!inv || inv.expires_at <= now.getTime()) return { ok: false as const, reason: 'not_live' as const }
            const taken = await trx.selectFrom('accounts').select('id').where('email', '=', inv.email).executeTakeFirst()
            if (taken) throw new EmailTaken()
            const confirmed = inv.proves_email === 1
            const row = {
              id: a.id,
              email: inv.email,
              name: a.name,
              password_hash: a.passwordHash,
              created_at: now.getTime(),
              email_confirmed: confirmed ? 1 : 0,
            }
            await trx.insertInto('accounts').values(row).execute()
            const account: AccountRecord = {
              id: row.id,
              email: row.email,
              name: row.name,
              passwordHash: row.password_hash,
              createdAt: now,
              emailConfirmed: confirmed,
            }
            return { ok: true as const, invitation: toInvitation(inv), account }
          }),
        )
      } catch (err) {
        // the transaction wraps what it throws in a StorageError (the cause kept)
        const taken = err instanceof EmailTaken || (err instanceof StorageError && (err.sqlstate === '23505' || err.cause instanceof EmailTaken))
        if (taken) return { ok: false, reason: 'email_taken' }
        throw err
      }
    },

    listInvitationsForEmail: (email, now) =>
      guard('invitations', async () => {
        const rows = await db
          .selectFrom('invitations')
          .select(COLUMNS)
          .where('email', '=', email)
          .where('expires_at', '>', now.getTime())
          .orderBy('created_at')
          .orderBy('id')
          .execute()
        return rows.map(toInvitation)
      }),

    takeInvitationFor: (accountId, which, now) =>
      guard('invitations', () =>
        db.transaction().execute(async (trx) => {
          const account = await trx.selectFrom('accounts').select(['email']).where('id', '=', accountId).executeTakeFirst()
          if (!account) return null
          let q = trx.deleteFrom('invitations').where('email', '=', account.email).where('expires_at', '>', now.getTime())
          q = 'tokenHash' in which ? q.where('token_hash', '=', which.tokenHash) : q.where('id', '=', which.id)
          const inv = await q.returning(COLUMNS).executeTakeFirst()
          if (!inv) return null
          if (inv.proves_email === 1) await trx.updateTable('accounts').set({ email_confirmed: 1 }).where('id', '=', accountId).execute()
          return toInvitation(inv)
        }),
      ),
  }
}

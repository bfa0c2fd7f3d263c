import { inTransaction, toStorageError } from '@envkeep/storage-postgres'
import { StorageError, type Role } from '@envkeep/env-api-plugin'
import { sql, type Kysely } from 'kysely'
import type { AccountRecord } from './account-store.js'
import type { InvitationRecord, InvitationStore } from './invitation-store.js'

interface InvitationRow {
  id: string
  vault_id: string
  email: string
  role: string
  invited_by: string
  created_at: string
  expires_at: string
  proves_email: boolean
}

function toInvitation(r: InvitationRow): InvitationRecord {
  return {
    id: r.id,
    vaultId: r.vault_id,
    email: r.email,
    role: r.role as Role,
    invitedBy: r.invited_by,
    createdAt: new Date(Number(r.created_at)),
    expiresAt: new Date(Number(r.expires_at)),
    provesEmail: r.proves_email,
  }
}

async function guard<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work()
  } catch (err) {
    throw toStorageError(err)
  }
}

/** Thrown inside acceptInvitation's transaction to roll it back (the email has an account). */
class EmailTaken extends Error {}

const COLUMNS = sql`id, vault_id, email, role, invited_by, created_at, expires_at, proves_email`

/** The invitation half of the PostgreSQL account store (the same contract as on SQLite). */
export function postgresInvitations(db: Kysely<unknown>): InvitationStore {
  const rows = async (q: ReturnType<typeof sql>): Promise<InvitationRow[]> => (await q.execute(db)).rows as InvitationRow[]
  return {
    createInvitation: (inv) =>
      inTransaction(db, async (trx) => {
        await sql`delete from invitations where vault_id = ${inv.vaultId} and lower(email) = lower(${inv.email})`.execute(trx)
        const r = await sql`insert into invitations (id, token_hash, vault_id, email, role, invited_by, created_at, expires_at, proves_email)
          values (${inv.id}, ${inv.tokenHash}, ${inv.vaultId}, ${inv.email}, ${inv.role}, ${inv.invitedBy}, ${inv.createdAt.getTime()}, ${inv.expiresAt.getTime()}, ${inv.provesEmail === true})
          returning ${COLUMNS}`.execute(trx)
        return toInvitation(r.rows[0] as InvitationRow)
      }),
    findInvitation: (tokenHash, now) =>
      guard(async () => {
        const [r] = await rows(sql`select ${COLUMNS} from invitations where token_hash = ${tokenHash} and expires_at > ${now.getTime()}`)
        return r ? toInvitation(r) : null
      }),
    listInvitations: (vaultId, now) =>
      guard(async () =>
        (await rows(sql`select ${COLUMNS} from invitations where vault_id = ${vaultId} and expires_at > ${now.getTime()} order by created_at, id`)).map(
          toInvitation,
        ),
      ),
    revokeInvitation: (vaultId, id) =>
      guard(async () => Number((await sql`delete from invitations where vault_id = ${vaultId} and id = ${id}`.execute(db)).numAffectedRows ?? 0) > 0),
    acceptInvitation: async (tokenHash, a, now) => {
      try {
        return await inTransaction(db, async (trx) => {
          // the row is deleted (and so locked) first: a link works exactly once, on any process
          const inv = (await sql`delete from invitations where token_hash = ${tokenHash} returning ${COLUMNS}`.execute(trx)).rows[0] as
            | InvitationRow
            | undefined
          if (!inv || Number(inv.expires_at) <= now.getTime()) return { ok: false as const, reason: 'not_live' as const }
          if ((await sql`select 1 from accounts where lower(email) = lower(${inv.email})`.execute(trx)).rows.length > 0) throw new EmailTaken()
          await sql`insert into accounts (id, email, name, password_hash, created_at, email_confirmed)
            values (${a.id}, ${inv.email}, ${a.name}, ${a.passwordHash}, ${now.getTime()}, ${inv.proves_email})`.execute(trx)
          const account: AccountRecord = {
            id: a.id,
            email: inv.email,
            name: a.name,
            passwordHash: a.passwordHash,
            createdAt: now,
            emailConfirmed: inv.proves_email,
          }
          return { ok: true as const, invitation: toInvitation(inv), account }
        })
      } catch (err) {
        // the transaction wraps what it throws in a StorageError (the cause kept)
        const taken = err instanceof EmailTaken || (err instanceof StorageError && (err.sqlstate === '23505' || err.cause instanceof EmailTaken))
        if (taken) return { ok: false, reason: 'email_taken' }
        throw err
      }
    },
    listInvitationsForEmail: (email, now) =>
      guard(async () =>
        (
          await rows(sql`select ${COLUMNS} from invitations where lower(email) = lower(${email}) and expires_at > ${now.getTime()} order by created_at, id`)
        ).map(toInvitation),
      ),
    takeInvitationFor: (accountId, which, now) =>
      inTransaction(db, async (trx) => {
        const by = 'tokenHash' in which ? sql`token_hash = ${which.tokenHash}` : sql`id = ${which.id}`
        const inv = (
          await sql`delete from invitations where ${by} and expires_at > ${now.getTime()}
            and lower(email) = (select lower(email) from accounts where id = ${accountId}) returning ${COLUMNS}`.execute(trx)
        ).rows[0] as InvitationRow | undefined
        if (!inv) return null
        if (inv.proves_email) await sql`update accounts set email_confirmed = true where id = ${accountId}`.execute(trx)
        return toInvitation(inv)
      }),
  }
}

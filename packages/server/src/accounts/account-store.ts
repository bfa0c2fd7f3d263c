import type { FactorStore } from './factor-store.js'
import type { IdentityStore } from './identity-store.js'
import type { AccountRecord } from './account-record.js'
import type { InvitationStore } from './invitation-store.js'

/** A local account of the self-hosting server (account-record.ts). */
export type { AccountRecord } from './account-record.js'

export interface NewAccount {
  readonly id: string
  readonly email: string
  readonly name: string
  readonly passwordHash: string
  /** default true (the setup page, the administrator's `user create`) */
  readonly emailConfirmed?: boolean
}

export interface WebSession {
  readonly account: AccountRecord
  readonly createdAt: Date
  readonly expiresAt: Date
}

/**
 * Local accounts, web sessions, invitations and the one-time setup token of the
 * self-hosting server: the server's own store, not part of the plugin's
 * storage contract (a host that embeds the plugin brings its own people).
 * Same rules as that contract: all async, absent → null, what must be
 * atomic is one method, failures are StorageError. Tokens arrive here only
 * as SHA-256 hex hashes. Emails are unique case-insensitively.
 *
 * On SQLite: sqlite-account-store.ts; on PostgreSQL: postgres-account-store.ts.
 */
export interface AccountStore extends InvitationStore, FactorStore, IdentityStore {
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
  /** Deletes sessions, setup tokens and invitations past their end; returns how many sessions. */
  deleteExpired(now: Date): Promise<number>
}

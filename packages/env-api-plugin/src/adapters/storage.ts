import type { ImportStore } from './import-store.js'
import type { CiIdentityStore } from './ci-identity-store.js'
import type { ClientRegistrationStore } from './client-registration-store.js'
import type { HistoryStore } from './history-store.js'
import type { OAuthStore } from './oauth-store.js'
import type { OverrideStore } from './override-store.js'
import type { ChangeResult } from './results.js'
import type { VaultStore } from './vault-store.js'
import type { WebhookStore } from './webhook-store.js'

export type * from './ci-identity-store.js'
export type * from './client-registration-store.js'
export type * from './history-store.js'
export type * from './oauth-store.js'
export type * from './override-store.js'
export type * from './vault-store.js'
export type * from './import-store.js'
export type * from './results.js'
export type * from './webhook-store.js'

/** One window's count after counting a request: how many in the window so far, and when it ends. */
export interface WindowCount {
  readonly count: number
  readonly resetAt: Date
}

/** What the housekeeping purge (`purgeExpired`) deletes: what ended before each cut. */
export interface PurgeCuts {
  /** access tokens expired, used subject-token keys and rate counters' windows ended, before now */
  readonly now: Date
  /** authorization codes expired before this */
  readonly codesBefore: Date
  /** sign-ins (with all their tokens) that ended (revoked or past their absolute end) before this */
  readonly signInsBefore: Date
  /** delivered and failed webhook deliveries of events before this (pending ones stay) */
  readonly deliveriesBefore: Date
}

/** Everything the plugin stores. One object implements every part. */
export interface Storage extends VaultStore, ImportStore, OAuthStore, CiIdentityStore, HistoryStore, WebhookStore, ClientRegistrationStore, OverrideStore {
  /**
   * Housekeeping (hourly): deletes what can no longer be used or needed. Never refused; its
   * value: how many rows went. Used refresh tokens of live sign-ins stay: reuse detection needs them. One
   * method for every table that expires, so a backend has one place to look.
   */
  purgeExpired(cuts: PurgeCuts): Promise<ChangeResult<never, number>>
  /**
   * Optional: counts one request for `key` in each window (`windowsMs`, starting at its first
   * request), atomically, where every server process sees the same counters. With it, the
   * per-sign-in rate limits hold across processes; without it, each process counts in memory
   * (SQLite: one process, so it has none). `afresh` first forgets every window of `key` (a
   * success starts afresh; with no windows, that is all it does).
   */
  countRequest?(key: string, windowsMs: readonly number[], now: Date, afresh?: boolean): Promise<WindowCount[]>
  /**
   * Optional, with `countRequest`: the counter of `key` in the window `windowMs` as stored
   * (its count and when its window started, expired or not), without counting; null when none.
   * With `afresh`, lets per-account back-offs (a run of failures, the last one's time) hold
   * across processes.
   */
  peekRequests?(key: string, windowMs: number): Promise<{ readonly count: number; readonly windowStart: Date } | null>
  /**
   * Optional (issue 20): calls `listener` after data the core caches may have changed (sign-ins
   * and their tokens, members, vaults and their data keys, environments and their versions, CI
   * identities, overrides), whoever changed it: this store, another store on the same database, or
   * another process; within a second of the change's commit. A signal may come without a change
   * (never the reverse). Returns the function that stops it; `close()` stops them all. Without
   * it, the core caches nothing (it could not see another process's changes).
   */
  watchChanges?(listener: () => void): () => void
}

/**
 * The webhook half of the storage contract (issue 14, item 5): a vault's
 * webhooks and the outbox of their deliveries. Storage keeps rows; the
 * domain (domain/webhooks.ts) knows who may add one and which URL is
 * allowed, and the delivery worker (webhooks/worker.ts) sends them.
 *
 * Events are facts of pushes (`imports`) storage already holds: a push was
 * created, decided (applied or rejected) or expired. `enqueueDeliveries`
 * turns those facts into one delivery per webhook that wants the event,
 * at most once (webhook, push, event), so calling it again, from several
 * processes, or as a sweep after a crash, never delivers twice.
 *
 * A webhook's signing secret crosses this interface only sealed (the
 * domain seals it with the vault's data key, additional data
 * `webhookPlaceOf`); storage copies bytes.
 */

import type { ChangeResult } from './results.js'
import type { AccessLogEntry } from './vault-store.js'

export type WebhookEvent = 'push.created' | 'push.decided' | 'push.expired'
export type WebhookFormat = 'generic' | 'slack'

export interface NewWebhook {
  /** made by the domain (a UUID): part of the secret's additional data */
  readonly id: string
  readonly vaultId: string
  readonly url: string
  readonly format: WebhookFormat
  /** at least one, no repeats */
  readonly events: readonly WebhookEvent[]
  /** the signing secret, sealed; null for formats that are not signed (slack) */
  readonly sealedSecret: Uint8Array | null
  readonly createdAt: Date
  /** the person; null for the server administrator */
  readonly createdBy: string | null
}

export interface WebhookRecord {
  readonly id: string
  readonly vaultId: string
  /**
   * What the domain stored as the URL: since issue 25 a masked form (scheme and host), the
   * URL itself being sealed in `sealedSecret`; rows written before hold the URL until the
   * domain seals it (changeWebhook, `seal`).
   */
  readonly url: string
  readonly format: WebhookFormat
  /** in the order push.created, push.decided, push.expired */
  readonly events: readonly WebhookEvent[]
  readonly createdAt: Date
  readonly createdBy: string | null
  /** the sealed secret as stored (listWebhooks gives it; other answers may leave it out) */
  readonly sealedSecret?: Uint8Array | null
  /** its latest deliveries, newest event first, when `listWebhooks` was asked for them */
  readonly recent?: readonly DeliveryRecord[]
}

export type DeliveryStatus = 'pending' | 'delivered' | 'failed'

export interface DeliveryRecord {
  readonly id: string
  readonly webhookId: string
  readonly vaultId: string
  readonly pushId: string
  readonly event: WebhookEvent
  /** when the event happened (the push's createdAt or decidedAt) */
  readonly occurredAt: Date
  readonly status: DeliveryStatus
  /** attempts made so far */
  readonly attempts: number
  /** when it may be tried next; null once delivered or failed */
  readonly nextAttemptAt: Date | null
  readonly lastAttemptAt: Date | null
  /** the HTTP status of the last attempt; null when there was no answer */
  readonly lastStatus: number | null
  /** why the last attempt failed, in words (never a body, a URL or a secret); null on success */
  readonly lastError: string | null
}

/** A delivery handed to one worker until `claimedUntil`, with what it needs to send it. */
export interface ClaimedDelivery extends DeliveryRecord {
  readonly webhook: WebhookRecord
  readonly sealedSecret: Uint8Array | null
}

export interface DeliveryAttempt {
  readonly deliveryId: string
  /** the claim's token: an attempt of a claim that was lost (expired and taken again) is ignored */
  readonly claimToken: string
  readonly at: Date
  readonly httpStatus: number | null
  readonly error: string | null
  /** `retry` keeps it pending until `nextAttemptAt` */
  readonly outcome: 'delivered' | 'retry' | 'failed'
  readonly nextAttemptAt: Date | null
}

/** A change of a vault's webhooks (`changeWebhook`). */
export type WebhookChange =
  /**
   * Stores a webhook, unless its vault has `most` webhooks already ('too_many', counted in the
   * transaction) or is gone ('not_found'). The id must be new (StorageError 23505).
   */
  | { readonly kind: 'create'; readonly webhook: NewWebhook; readonly most: number }
  /**
   * Replaces a webhook's `url` and `sealedSecret` when its url is still `ifUrl` (compare and
   * set): the domain's one-time sealing of URLs stored plain before issue 25. 'not_found',
   * nothing written, when the webhook is gone, is another vault's, or its url changed.
   */
  | {
      readonly kind: 'seal'
      readonly vaultId: string
      readonly webhookId: string
      readonly ifUrl: string
      readonly url: string
      readonly sealedSecret: Uint8Array
    }
  /** Deletes a webhook of the vault and its deliveries, at once; 'not_found' when there was none. */
  | { readonly kind: 'delete'; readonly vaultId: string; readonly webhookId: string }

export interface WebhookStore {
  /**
   * Applies `change` and appends `log` (when given), in one transaction. Answers the webhook
   * as it now is (created, sealed) or was (deleted); refused, with nothing written or logged,
   * for the reasons each kind gives.
   */
  changeWebhook(change: WebhookChange, log?: AccessLogEntry): Promise<ChangeResult<'not_found' | 'too_many', WebhookRecord>>

  /**
   * The webhooks of a vault, oldest first; [] for an unknown vault; `null`: every vault's (the
   * one pass at start that seals URLs stored before they were sealed), oldest first. With
   * `deliveries`, each carries its latest deliveries, at most that many, newest event first
   * (`recent`).
   */
  listWebhooks(vaultId: string | null, deliveries?: number): Promise<WebhookRecord[]>

  /**
   * For every push event that happened at or after `since` (and at or after
   * the webhook's own creation), of one push (`pushId`) or of all, inserts
   * a pending delivery (next attempt: `now`) for each webhook of the push's
   * vault that wants the event, unless that (webhook, push, event) has one
   * already. Events: `push.created` at the push's createdAt;
   * `push.decided` at decidedAt when applied or rejected; `push.expired` at
   * decidedAt when expired. Never refused; its value: how many were
   * inserted. Safe from
   * several processes at once. (Not folded into `claimDeliveries`: the
   * domain enqueues one push's deliveries right after it changed, and the
   * minutely sweep over a day of pushes would be too much for every claim.)
   */
  enqueueDeliveries(input: { readonly now: Date; readonly since: Date; readonly pushId?: string }): Promise<ChangeResult<never, number>>

  /**
   * Claims up to `limit` pending deliveries due at `now` (nextAttemptAt <=
   * now) that no one holds (or whose claim ended), oldest due first, for
   * `leaseMs` under `token`. Atomic: under concurrency, every delivery goes
   * to one claimer. Never refused; its value: the claimed deliveries (none: empty).
   */
  claimDeliveries(input: {
    readonly now: Date
    readonly leaseMs: number
    readonly limit: number
    readonly token: string
  }): Promise<ChangeResult<never, ClaimedDelivery[]>>

  /**
   * Records an attempt of a claimed delivery (attempts + 1, last status and
   * error, the outcome) and releases the claim. 'not_found', nothing written,
   * when the delivery is gone or no longer claimed with `claimToken`.
   * (Finished deliveries are deleted by the housekeeping purge, `purgeExpired`.)
   */
  finishAttempt(attempt: DeliveryAttempt): Promise<ChangeResult<'not_found'>>
}

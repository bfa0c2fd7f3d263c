import { doneValue } from '../adapters/results.js'
import type { ImportRecord, VaultRecord } from '../adapters/storage.js'
import type { ClaimedDelivery, DeliveryAttempt } from '../adapters/webhook-store.js'
import type { DomainDeps } from './deps.js'
import { openWebhookCredentials, type WebhookCredentials } from './webhooks.js'

/**
 * The delivery side of webhooks, as the worker (webhooks/worker.ts) uses it: claim what is
 * due, learn what a delivery is about, record each attempt, enqueue missed events. The
 * worker owns sending (HTTP, signatures, retries); the domain owns the rows and the keys.
 */

/** Claims up to `limit` deliveries due now, for `leaseMs`, under `token` (each goes to one claimer). */
export async function claimDeliveries(
  d: Pick<DomainDeps, 'storage' | 'now'>,
  input: { leaseMs: number; limit: number; token: string },
): Promise<ClaimedDelivery[]> {
  return doneValue(await d.storage.claimDeliveries({ now: d.now(), ...input }))
}

/** Records an attempt of a claimed delivery; whether the claim still held. */
export async function finishDelivery(d: Pick<DomainDeps, 'storage'>, attempt: DeliveryAttempt): Promise<boolean> {
  return (await d.storage.finishAttempt(attempt)).ok
}

/** Enqueues the deliveries of push events of the last `windowMs` not enqueued yet (expiries, and any missed after a crash). */
export async function sweepDeliveries(d: Pick<DomainDeps, 'storage' | 'now'>, windowMs: number): Promise<number> {
  const now = d.now()
  return doneValue(await d.storage.enqueueDeliveries({ now, since: new Date(now.getTime() - windowMs) }))
}

/** What a claimed delivery is about: its push, its vault, and the webhook's URL and secret opened. */
export type DeliveryFacts =
  | { readonly push: ImportRecord; readonly vault: VaultRecord; readonly credentials: WebhookCredentials }
  /** why it cannot be sent, in words (never a URL, a secret or a value) */
  | { readonly error: string }

export async function deliveryFacts(d: Pick<DomainDeps, 'storage' | 'now' | 'crypto'>, delivery: ClaimedDelivery): Promise<DeliveryFacts> {
  const push = await d.storage.getImport(delivery.pushId, d.now())
  const [vault] = await d.storage.findVaults({ id: delivery.vaultId })
  if (!push || !vault) return { error: 'the push or the vault is gone' }
  try {
    const { url, secret } = await openWebhookCredentials(d.crypto, delivery.webhook, delivery.sealedSecret)
    return { push, vault, credentials: { url, secret } }
  } catch {
    return { error: 'the webhook could not be opened (master key missing or changed)' }
  }
}

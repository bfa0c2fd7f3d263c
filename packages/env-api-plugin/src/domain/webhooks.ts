import { randomBytes, randomUUID } from 'node:crypto'
import type { VaultAccess } from '../adapters/vault-store.js'
import type { DeliveryRecord, WebhookEvent, WebhookFormat, WebhookRecord } from '../adapters/webhook-store.js'
import { authorOf, type Actor } from './actor.js'
import type { DomainDeps } from './deps.js'
import { fail } from './failure.js'
import { canManageVault } from './permissions.js'
import { locateVault } from './vaults.js'
import { webhookUrlProblem } from './webhook-url.js'

/**
 * Per-vault webhooks (issue 14, item 5): owners add, list and remove them;
 * a push created, decided or expired is delivered to each webhook that
 * wants the event (webhooks/worker.ts), never with a value. A generic
 * webhook's deliveries are signed with its own secret, made here, shown
 * once and stored sealed with the vault's data key.
 */

export const WEBHOOK_EVENTS: readonly WebhookEvent[] = Object.freeze(['push.created', 'push.decided', 'push.expired'])
export const WEBHOOK_FORMATS: readonly WebhookFormat[] = Object.freeze(['generic', 'slack'])
export const MAX_WEBHOOKS = 10
/** Deliveries shown per webhook. */
export const DELIVERIES_SHOWN = 10
export const WEBHOOK_NOT_FOUND = 'this webhook does not exist in the vault'

export interface WebhookView {
  readonly webhook: WebhookRecord
  /** newest first */
  readonly deliveries: readonly DeliveryRecord[]
}

function isEvent(s: string): s is WebhookEvent {
  return (WEBHOOK_EVENTS as readonly string[]).includes(s)
}

function isFormat(s: string): s is WebhookFormat {
  return (WEBHOOK_FORMATS as readonly string[]).includes(s)
}

/** The vault, when the actor may manage its webhooks (owners); else forbidden. */
async function ownedVault(d: DomainDeps, actor: Actor, vaultId: string): Promise<VaultAccess> {
  const vault = await locateVault(d, actor, vaultId)
  if (!canManageVault(vault.role)) throw fail.forbidden(`your role (${vault.role}) cannot manage webhooks; owners can`)
  return vault
}

/**
 * Adds a webhook. Its URL must be http(s) and, unless the server allows
 * private addresses, every address its host resolves to public. Returns
 * the signing secret (generic format) for the owner to copy: it is never
 * shown again.
 */
export async function addWebhook(
  d: DomainDeps,
  actor: Actor,
  input: { vaultId: string; url: string; format: string; events: readonly string[] },
): Promise<{ webhook: WebhookRecord; secret: string | null }> {
  const vault = await ownedVault(d, actor, input.vaultId)
  if (!isFormat(input.format)) throw fail.invalid(`the format must be one of ${WEBHOOK_FORMATS.join(', ')}`)
  if (input.events.length === 0) throw fail.invalid('choose at least one event')
  if (!input.events.every(isEvent)) throw fail.invalid(`events must be among ${WEBHOOK_EVENTS.join(', ')}`)
  const events = WEBHOOK_EVENTS.filter((e) => input.events.includes(e))
  const url = input.url.trim()
  const problem = await webhookUrlProblem(url, { allowPrivate: d.allowPrivateWebhooks === true, resolveHost: d.resolveHost })
  if (problem) throw fail.invalid(problem)
  if ((await d.storage.listWebhooks(vault.id)).length >= MAX_WEBHOOKS) throw fail.conflict(`a vault has at most ${MAX_WEBHOOKS} webhooks; remove one first`)
  const id = randomUUID()
  let secret: string | null = null
  let sealedSecret: Uint8Array | null = null
  if (input.format === 'generic') {
    if (!d.hasKey) throw fail.notConfigured() // the secret is kept sealed with the vault's key
    secret = `whsec_${randomBytes(32).toString('base64url')}`
    sealedSecret = await d.crypto.sealWebhookSecret(vault.id, id, secret)
  }
  const webhook = await d.storage.createWebhook({
    id,
    vaultId: vault.id,
    url,
    format: input.format,
    events,
    sealedSecret,
    createdAt: d.now(),
    createdBy: authorOf(actor),
  })
  return { webhook, secret }
}

/** The vault's webhooks with their last deliveries (owners). */
export async function listWebhooks(d: DomainDeps, actor: Actor, vaultId: string): Promise<{ vault: VaultAccess; webhooks: WebhookView[] }> {
  const vault = await ownedVault(d, actor, vaultId)
  const list = await d.storage.listWebhooks(vault.id)
  const webhooks = await Promise.all(
    list.map(async (webhook) => ({ webhook, deliveries: await d.storage.listDeliveries(vault.id, webhook.id, DELIVERIES_SHOWN) })),
  )
  return { vault, webhooks }
}

/** Removes a webhook and its deliveries (owners); not_found when the vault has no such webhook. */
export async function removeWebhook(d: DomainDeps, actor: Actor, input: { vaultId: string; webhookId: string }): Promise<VaultAccess> {
  const vault = await ownedVault(d, actor, input.vaultId)
  if (!(await d.storage.deleteWebhook(vault.id, input.webhookId))) throw fail.notFound(WEBHOOK_NOT_FOUND, 'the webhook')
  return vault
}

/**
 * Right after a push changed (created, decided): its deliveries enqueued.
 * A failure here does not undo the change: the delivery worker's sweep
 * enqueues what is missing (webhook-store.ts, enqueueDeliveries).
 */
export async function notifyWebhooks(d: Pick<DomainDeps, 'storage' | 'now'>, pushId: string): Promise<void> {
  try {
    await d.storage.enqueueDeliveries({ now: d.now(), since: new Date(0), pushId })
  } catch {
    // the sweep catches up
  }
}

import { randomBytes, randomUUID } from 'node:crypto'
import type { VaultAccess } from '../adapters/vault-store.js'
import type { DeliveryRecord, WebhookEvent, WebhookFormat, WebhookRecord } from '../adapters/webhook-store.js'
import { authorOf, entryFor, type Actor } from './actor.js'
import type { DomainDeps } from './deps.js'
import { fail } from './failure.js'
import { canManageVault } from './permissions.js'
import { locateVault, VAULT_NOT_FOUND } from './vaults.js'
import { shownUrl, webhookUrlProblem } from './webhook-url.js'
import type { VaultCrypto } from '../vault-service.js'

/**
 * Per-vault webhooks (issue 14, item 5): owners add, list and remove them;
 * a push created, decided or expired is delivered to each webhook that
 * wants the event (webhooks/worker.ts), never with a value. A generic
 * webhook's deliveries are signed with its own secret, made here, shown
 * once and stored sealed with the vault's data key. Its URL is sealed with
 * it (issue 25: a Slack URL is a credential): `sealedSecret` holds both,
 * and the stored `url` is only the shown form (shownUrl).
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
  const tooMany = () => fail.conflict(`a vault has at most ${MAX_WEBHOOKS} webhooks; remove one first`)
  if ((await d.storage.listWebhooks(vault.id)).length >= MAX_WEBHOOKS) throw tooMany()
  const id = randomUUID()
  if (!d.hasKey) throw fail.notConfigured() // the URL and the secret are kept sealed with the vault's key
  const secret = input.format === 'generic' ? `whsec_${randomBytes(32).toString('base64url')}` : null
  const sealedSecret = await sealCredentials(d.crypto, vault.id, id, { url, secret })
  const at = d.now()
  const r = await d.storage.changeWebhook(
    {
      kind: 'create',
      webhook: { id, vaultId: vault.id, url: shownUrl(url), format: input.format, events, sealedSecret, createdAt: at, createdBy: authorOf(actor) },
      most: MAX_WEBHOOKS,
    },
    entryFor(actor, { vaultId: vault.id, action: 'webhook_added', at, detail: `${input.format}: ${events.join(', ')}` }),
  )
  if (!r.ok) throw r.reason === 'too_many' ? tooMany() : fail.notFound(VAULT_NOT_FOUND, 'the vault')
  return { webhook: r.value, secret }
}

/** What a webhook's sealed blob holds: its URL and, for the generic format, its signing secret. */
export interface WebhookCredentials {
  readonly url: string
  readonly secret: string | null
}

function sealCredentials(crypto: VaultCrypto, vaultId: string, webhookId: string, c: WebhookCredentials): Promise<Uint8Array> {
  return crypto.sealWebhookSecret(vaultId, webhookId, JSON.stringify({ v: 2, url: c.url, secret: c.secret }))
}

/**
 * The URL and secret of a webhook: from its sealed blob, or, for a row written before URLs
 * were sealed (the blob is the bare secret, or there is none), the stored url. `sealed`
 * false means the row is one of those (sealLegacyWebhooks seals it).
 */
export async function openWebhookCredentials(
  crypto: VaultCrypto,
  w: { readonly vaultId: string; readonly id: string; readonly url: string },
  sealedSecret: Uint8Array | null | undefined,
): Promise<WebhookCredentials & { sealed: boolean }> {
  if (!sealedSecret) return { url: w.url, secret: null, sealed: false }
  const opened = await crypto.openWebhookSecret(w.vaultId, w.id, sealedSecret)
  if (!opened.startsWith('{')) return { url: w.url, secret: opened, sealed: false }
  const c = JSON.parse(opened) as { url: string; secret: string | null }
  return { url: c.url, secret: c.secret, sealed: true }
}

/**
 * Seals the URLs of webhooks stored before issue 25 (plain in `url`): each gets the blob of
 * URL and secret and keeps only its shown form. Runs once per process when the delivery
 * worker starts (it needs the master key), on every backend alike; compare-and-set, so
 * several processes may run it at once. Returns how many it sealed.
 */
export async function sealLegacyWebhooks(d: Pick<DomainDeps, 'storage' | 'crypto'>): Promise<number> {
  let n = 0
  // every vault's webhooks in one read: most installations have far more vaults than webhooks
  for (const w of await d.storage.listWebhooks(null)) {
    const c = await openWebhookCredentials(d.crypto, w, w.sealedSecret)
    if (c.sealed) continue
    const sealedSecret = await sealCredentials(d.crypto, w.vaultId, w.id, c)
    const r = await d.storage.changeWebhook({ kind: 'seal', vaultId: w.vaultId, webhookId: w.id, ifUrl: w.url, url: shownUrl(w.url), sealedSecret })
    if (r.ok) n++
  }
  return n
}

/** The vault's webhooks with their last deliveries (owners). */
export async function listWebhooks(d: DomainDeps, actor: Actor, vaultId: string): Promise<{ vault: VaultAccess; webhooks: WebhookView[] }> {
  const vault = await ownedVault(d, actor, vaultId)
  const list = await d.storage.listWebhooks(vault.id, DELIVERIES_SHOWN)
  return { vault, webhooks: list.map(({ recent, ...webhook }) => ({ webhook, deliveries: recent ?? [] })) }
}

/** Removes a webhook and its deliveries (owners); not_found when the vault has no such webhook. */
export async function removeWebhook(d: DomainDeps, actor: Actor, input: { vaultId: string; webhookId: string }): Promise<VaultAccess> {
  const vault = await ownedVault(d, actor, input.vaultId)
  const gone = (await d.storage.listWebhooks(vault.id)).find((w) => w.id === input.webhookId)
  if (!gone) throw fail.notFound(WEBHOOK_NOT_FOUND, 'the webhook')
  const removed = await d.storage.changeWebhook(
    { kind: 'delete', vaultId: vault.id, webhookId: input.webhookId },
    entryFor(actor, { vaultId: vault.id, action: 'webhook_removed', at: d.now(), detail: `${gone.format}: ${gone.events.join(', ')}` }),
  )
  if (!removed.ok) throw fail.notFound(WEBHOOK_NOT_FOUND, 'the webhook')
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

import { createHmac, timingSafeEqual } from 'node:crypto'
import type { ImportRecord } from '../adapters/storage.js'
import type { WebhookEvent } from '../adapters/webhook-store.js'

/**
 * What a delivery says (issue 14, item 5): ids, names, who, the decision,
 * the review URL and the time; never a value. Two formats: `generic` JSON,
 * signed; Slack's incoming-webhook JSON (`{ text }`).
 */

export interface PushEventFacts {
  readonly event: WebhookEvent
  readonly deliveryId: string
  readonly vault: { readonly id: string; readonly name: string }
  readonly push: ImportRecord
  /** the sender (created), the person who decided (decided), nobody (expired) */
  readonly who: { readonly id: string; readonly name: string | null } | null
  /** `{baseUrl}/v/{vault}/variables/imports/{push}` */
  readonly reviewUrl: string
  /** when the event happened */
  readonly time: Date
}

export interface GenericBody {
  readonly event: WebhookEvent
  readonly delivery: string
  readonly vault: { readonly id: string; readonly name: string }
  readonly environment: string
  readonly push: { readonly id: string; readonly names: readonly string[] }
  readonly who: { readonly id: string; readonly name: string | null } | null
  /** for push.decided: applied or rejected; for push.expired: expired; else null */
  readonly decision: 'applied' | 'rejected' | 'expired' | null
  readonly reviewUrl: string
  readonly time: string
}

function decisionOf(f: PushEventFacts): GenericBody['decision'] {
  if (f.event === 'push.created') return null
  if (f.event === 'push.expired') return 'expired'
  return f.push.status === 'applied' || f.push.status === 'rejected' ? f.push.status : null
}

/** The generic body, as the exact bytes sent and signed. */
export function genericBody(f: PushEventFacts): string {
  const body: GenericBody = {
    event: f.event,
    delivery: f.deliveryId,
    vault: { id: f.vault.id, name: f.vault.name },
    environment: f.push.environment,
    push: { id: f.push.id, names: [...f.push.names] },
    who: f.who && { id: f.who.id, name: f.who.name },
    decision: decisionOf(f),
    reviewUrl: f.reviewUrl,
    time: f.time.toISOString(),
  }
  return JSON.stringify(body)
}

/** Slack's control characters in text: & < > (https://api.slack.com/reference/surfaces/formatting#escaping). */
function slackEscape(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
}

/** The Slack body: one line of text with the same facts. */
export function slackBody(f: PushEventFacts): string {
  const who = f.who ? slackEscape(f.who.name ?? 'someone') : 'nobody'
  const n = f.push.names.length
  const names = f.push.names.slice(0, 20).join(', ') + (n > 20 ? `, … (${n - 20} more)` : '')
  const where = `*${slackEscape(f.push.environment)}* of vault *${slackEscape(f.vault.name)}*`
  const count = `${n} variable${n === 1 ? '' : 's'} (${names})`
  const link = `<${f.reviewUrl}|Review>`
  let text: string
  if (f.event === 'push.created') text = `${who} pushed ${count} to ${where}; it waits for review. ${link}`
  else if (f.event === 'push.expired') text = `A push of ${count} to ${where} expired without a decision. ${link}`
  else text = `${who} ${decisionOf(f) ?? 'decided'} a push of ${count} to ${where}. ${link}`
  return JSON.stringify({ text })
}

/**
 * `sha256=<hex HMAC-SHA256 of "<timestamp>.<raw body>">` under the webhook's secret (its UTF-8
 * bytes), `timestamp` being the `x-envkeep-timestamp` header (Unix seconds). The timestamp is
 * inside the MAC (issue 25): a captured delivery cannot be replayed later under a fresh time.
 */
export function signatureOf(secret: string, timestamp: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.${body}`, 'utf8').digest('hex')}`
}

/** How far a delivery's timestamp may be from the receiver's clock by default (seconds). */
export const SIGNATURE_TOLERANCE_S = 300

/**
 * A receiver's check of a generic delivery: the signature matches `timestamp.body` (compared in
 * constant time), and the timestamp is within `toleranceS` of `now`. Keep the delivery ids seen
 * within the tolerance to refuse an exact replay too.
 */
export function verifyWebhookSignature(o: {
  secret: string
  body: string
  timestamp: string | undefined
  signature: string | undefined
  now?: Date
  toleranceS?: number
}): boolean {
  if (typeof o.timestamp !== 'string' || !/^[0-9]{1,12}$/.test(o.timestamp) || typeof o.signature !== 'string') return false
  const skew = Math.abs((o.now ?? new Date()).getTime() / 1000 - Number(o.timestamp))
  if (skew > (o.toleranceS ?? SIGNATURE_TOLERANCE_S)) return false
  const expected = Buffer.from(signatureOf(o.secret, o.timestamp, o.body))
  const got = Buffer.from(o.signature)
  return got.length === expected.length && timingSafeEqual(got, expected)
}

import { shownUrl } from '../domain/webhook-url.js'
import { settingsPath, vaultHeader } from './vault-header.js'
import type { FastifyInstance, FastifyReply } from 'fastify'
import type { Person } from '../adapters/people.js'
import type { VaultAccess } from '../adapters/vault-store.js'
import type { DeliveryRecord, WebhookRecord } from '../adapters/webhook-store.js'
import { WEBHOOK_EVENTS, type WebhookView } from '../domain/webhooks.js'
import { vaultTag } from '../errors.js'
import { csrfField, field, pagePath, personOrSignIn, seeOther, sendPage, when, type PageDeps, topBar } from './context.js'
import { pageActor, pageDomain } from './domain.js'
import { refusalBox, sendErrorPage, toPageFailure, type PageFailure } from './error.js'
import { html, type SafeHtml } from './html.js'
import { vaultUrl } from './vault.js'

/**
 * "Webhooks" of a vault (owners; issue 14, item 5). Every rule is the domain layer's.
 *   GET  /v/:vault/webhooks          the webhooks, each with its last deliveries; the form to add one
 *   POST /v/:vault/webhooks/add      url, format, events: answers the page with the signing secret, shown once
 *   POST /v/:vault/webhooks/remove   webhook
 */

type Params = { vault: string }

const EVENT_LABELS: Readonly<Record<string, string>> = Object.freeze({
  'push.created': 'a push is sent for review',
  'push.decided': 'a push is applied or rejected',
  'push.expired': 'a push expires undecided',
})

export { shownUrl }

function outcome(d: DeliveryRecord): SafeHtml {
  const detail = d.lastError ?? (d.lastStatus !== null ? `HTTP ${d.lastStatus}` : '')
  const label = d.status === 'pending' && d.attempts > 0 ? 'retrying' : d.status
  return html`<span class="delivery delivery-${d.status}">${label}</span>${detail ? html` <span class="muted">${detail}</span>` : ''}${
    d.status === 'pending' && d.nextAttemptAt ? html` <span class="muted small">next ${when(d.nextAttemptAt)}</span>` : ''
  }`
}

function deliveriesTable(list: readonly DeliveryRecord[]): SafeHtml {
  if (list.length === 0) return html`<p class="muted">No delivery yet.</p>`
  return html`<table class="stack deliveries"><thead><tr><th>When</th><th>Event</th><th>Result</th><th>Attempts</th><th>Last attempt</th></tr></thead><tbody>${list.map(
    (d) => html`<tr>
<td data-label="When">${when(d.occurredAt)}</td>
<td data-label="Event"><code>${d.event}</code></td>
<td data-label="Result">${outcome(d)}</td>
<td data-label="Attempts">${d.attempts}</td>
<td data-label="Last attempt">${when(d.lastAttemptAt)}</td>
</tr>`,
  )}</tbody></table>`
}

function webhookCard(base: string, csrf: SafeHtml, w: WebhookRecord, deliveries: readonly DeliveryRecord[]): SafeHtml {
  return html`<section class="card webhook" aria-label="Webhook ${shownUrl(w.url)}">
<h3><code class="url">${shownUrl(w.url)}</code></h3>
<p>Format: <strong>${w.format === 'slack' ? 'Slack' : 'generic JSON, signed'}</strong> · Events: ${w.events.map((e, i) => html`${i > 0 ? ', ' : ''}<code>${e}</code>`)} · Added ${when(w.createdAt)}</p>
<h4>Last deliveries</h4>
${deliveriesTable(deliveries)}
<form method="post" action="${base}/remove" class="inline" data-confirm="Remove this webhook? Its deliveries stop at once.">${csrf}<input type="hidden" name="webhook" value="${w.id}"><button type="submit" class="danger">Remove webhook</button></form>
</section>`
}

interface View {
  readonly vault: VaultAccess
  readonly person: Person
  readonly webhooks: readonly WebhookView[]
  readonly problem?: PageFailure | null
  readonly notice?: string | null
  /** just added: the secret to copy, shown this once */
  readonly added?: { readonly webhook: WebhookRecord; readonly secret: string | null } | null
}

async function render(deps: PageDeps, reply: FastifyReply, v: View): Promise<FastifyReply> {
  const csrf = csrfField(reply.generateCsrf())
  const base = `${vaultUrl(deps, v.vault.id)}/webhooks`
  const added = v.added
  // under Settings (issue 25: they hung off the vault page's header)
  const body = html`${await vaultHeader(deps, v.vault, 'settings', { ownHeading: true })}
<p class="crumbs"><a href="${pagePath(deps, settingsPath(v.vault.id))}">Settings</a> › Webhooks</p>
<h1>Webhooks</h1>
${v.problem ? refusalBox(v.problem) : ''}
${v.notice ? html`<p class="notice" role="status">${v.notice}</p>` : ''}
${
  added
    ? html`<section class="notice" role="status" aria-labelledby="added-title">
<h2 id="added-title">Webhook added</h2>
${
  added.secret
    ? html`<p>Its signing secret, to give the receiver: copy it now, <strong>it is not shown again</strong>.</p>
<p><code class="secret" id="webhook-secret">${added.secret}</code></p>
<p class="hint">Each delivery carries <code>x-envkeep-timestamp</code> (Unix seconds) and <code>x-envkeep-signature: sha256=…</code>, the hex HMAC-SHA256 under this secret of the timestamp, a dot and the raw body. Refuse a delivery whose timestamp is more than five minutes off.</p>`
    : html`<p>Slack deliveries are not signed; keep the Slack URL to yourself.</p>`
}
</section>`
    : ''
}
<p>A webhook tells another service (a chat, a deploy tool) when a push of this vault is sent for review, decided or expires. It says which vault, environment and push, the names, who and the review link; never a value. Failed deliveries are tried again, five times over about half an hour.</p>
${v.webhooks.length === 0 ? html`<p class="muted">No webhook yet.</p>` : v.webhooks.map((w) => webhookCard(base, csrf, w.webhook, w.deliveries))}
<section class="card">
<h2>Add a webhook</h2>
<form method="post" action="${base}/add">${csrf}
<label for="webhook-url">URL</label>
<input id="webhook-url" name="url" type="url" required maxlength="2000" placeholder="https://hooks.example.com/envkeep" autocomplete="off" spellcheck="false">
<label for="webhook-format">Format</label>
<select id="webhook-format" name="format"><option value="generic">Generic JSON, signed</option><option value="slack">Slack incoming webhook</option></select>
<fieldset><legend>Events</legend>${WEBHOOK_EVENTS.map(
    (e) => html`<label class="check"><input type="checkbox" name="events" value="${e}" checked> <span><code>${e}</code>: ${EVENT_LABELS[e]}</span></label>`,
  )}</fieldset>
<button type="submit">Add webhook</button>
</form>
</section>`
  return sendPage(deps, reply, { status: v.problem?.status ?? 200, title: `Webhooks · ${v.vault.name}`, body, person: v.person })
}

/** The repeated `events` field of the form as a list. */
function eventsOf(body: unknown): string[] {
  const raw = (body as Record<string, unknown> | null)?.events
  return typeof raw === 'string' ? [raw] : Array.isArray(raw) ? raw.filter((e): e is string => typeof e === 'string') : []
}

export function webhookRoutes(app: FastifyInstance, deps: PageDeps): void {
  const domain = pageDomain(deps)

  app.get<{ Params: Params }>('/v/:vault/webhooks', async function webhooksPage(request, reply) {
    const person = await personOrSignIn(deps, request, reply)
    if (!person) return reply
    request.envkeepOperation = `showing the webhooks of vault ${vaultTag(request.params.vault)}`
    const { vault, webhooks } = await domain.listWebhooks(pageActor(person, request), request.params.vault)
    const notice = field(request.query, 'done') === 'removed' ? 'The webhook was removed.' : null
    return render(deps, reply, { vault, person, webhooks, notice })
  })

  app.post<{ Params: Params }>('/v/:vault/webhooks/add', { preHandler: app.csrfProtection }, async function addWebhookForm(request, reply) {
    const person = await personOrSignIn(deps, request, reply, `${vaultUrl(deps, request.params.vault)}/webhooks`)
    if (!person) return reply
    request.envkeepOperation = `adding a webhook to vault ${vaultTag(request.params.vault)}`
    const actor = pageActor(person, request)
    try {
      const added = await domain.addWebhook(actor, {
        vaultId: request.params.vault,
        url: field(request.body, 'url'),
        format: field(request.body, 'format'),
        events: eventsOf(request.body),
      })
      // answered here, not redirected: the secret is shown this once and never put in a URL
      const { vault, webhooks } = await domain.listWebhooks(actor, request.params.vault)
      return render(deps, reply, { vault, person, webhooks, added })
    } catch (err) {
      return refused(reply, err, person, request.params.vault, request)
    }
  })

  app.post<{ Params: Params }>('/v/:vault/webhooks/remove', { preHandler: app.csrfProtection }, async function removeWebhookForm(request, reply) {
    const person = await personOrSignIn(deps, request, reply, `${vaultUrl(deps, request.params.vault)}/webhooks`)
    if (!person) return reply
    request.envkeepOperation = `removing a webhook from vault ${vaultTag(request.params.vault)}`
    try {
      const vault = await domain.removeWebhook(pageActor(person, request), { vaultId: request.params.vault, webhookId: field(request.body, 'webhook') })
      return seeOther(deps, reply, `/v/${encodeURIComponent(vault.id)}/webhooks?done=removed`)
    } catch (err) {
      return refused(reply, err, person, request.params.vault, request)
    }
  })

  /** A refused form: the page again with the refusal on top, or an error page when the page itself cannot be shown. */
  async function refused(
    reply: FastifyReply,
    err: unknown,
    person: Person,
    vaultId: string,
    request: Parameters<typeof toPageFailure>[1],
  ): Promise<FastifyReply> {
    const f = toPageFailure(err, request)
    const listed =
      f.status >= 500 || f.status === 403 || f.status === 404 ? null : await domain.listWebhooks(pageActor(person, request), vaultId).catch(() => null)
    if (!listed) return sendErrorPage(reply, { ...f, ...(await topBar(deps, reply, person)) })
    return render(deps, reply, { ...listed, person, problem: f })
  }
}

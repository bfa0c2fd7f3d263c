import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { referenceOf, targetText } from '../domain/references.js'
import type { Person } from '../adapters/people.js'
import type { EnvironmentInfo, ImportRecord, VaultAccess } from '../adapters/storage.js'
import type { PersonActor } from '../domain/actor.js'
import { mayAccess } from '../domain/permissions.js'
import { MAX_REJECT_REASON } from '../domain/pushes.js'
import { secondPersonRequired } from '../domain/vault-admin.js'
import { vaultTag } from '../errors.js'
import { csrfField, field, pagePath, personCache, personLabel, personOrSignIn, seeOther, sendPage, when, type PageDeps, topBar } from './context.js'
import { pageActor, pageDomain } from './domain.js'
import { refusalBox, sendErrorPage, toPageFailure, type PageFailure } from './error.js'
import { changePath } from './history.js'
import { html, type SafeHtml } from './html.js'
import { codeMark } from './code-mark.js'
import { vaultUrl } from './vault.js'
import { reviewPath } from '../review-path.js'

type Params = { vault: string; import: string }

interface ReviewContext {
  readonly person: Person
  readonly actor: PersonActor
  readonly vault: VaultAccess
  readonly push: ImportRecord
  readonly env: EnvironmentInfo
}

const OUTCOME: Readonly<Record<ImportRecord['status'], string>> = Object.freeze({
  pending: 'Waiting for review',
  applied: 'Applied',
  rejected: 'Rejected',
  expired: 'Expired',
})

/** The review page of a push: `/v/:vault/variables/imports/:import`, with Reveal, Apply and Reject. */
export function reviewRoutes(app: FastifyInstance, deps: PageDeps): void {
  const domain = pageDomain(deps)

  /** The push as a member of its vault sees it (expired first if its time is up), or 404. */
  async function load(person: Person, request: FastifyRequest<{ Params: Params }>): Promise<ReviewContext> {
    const actor = pageActor(person, request)
    const view = await domain.loadPush(actor, { vaultId: request.params.vault, importId: request.params.import })
    return { person, actor, ...view }
  }

  async function render(
    reply: FastifyReply,
    ctx: ReviewContext,
    extra: {
      problem?: PageFailure | null
      revealed?: Readonly<Record<string, string>> | null
      /** current values of the names the push overwrites, shown beside the new ones */
      current?: Readonly<Record<string, string>> | null
    } = {},
  ): Promise<FastifyReply> {
    const { person, vault, push, env } = ctx
    const people = personCache(deps)
    const [sender, decider] = await Promise.all([people(push.senderId), people(push.decidedBy)])
    const pending = push.status === 'pending'
    const readable = mayAccess(vault, env, 'read')
    const canDecide = domain.mayDecide(ctx.actor, ctx)
    const token = reply.generateCsrf()
    const action = pagePath(deps, reviewPath(vault.id, push.id))
    const overwrites = new Set(push.overwrites)
    const deletes = new Set(push.deletes)
    // a reference (staged or current) shows as its target, never as the value it leads to
    const revealed = extra.revealed ? shownForms(extra.revealed) : null
    const current = shownForms(extra.current ?? {})

    const nameRows = push.names.map((name) => {
      const kind = deletes.has(name) ? 'delete' : overwrites.has(name) ? 'overwrite' : 'new'
      const value = revealed && Object.hasOwn(revealed, name) ? revealed[name] : undefined
      return html`<tr>
<td data-label="Name"><code class="name">${name}</code>${codeMark(name)}</td>
<td data-label="Change"><span class="mark mark-${kind}">${kind === 'delete' ? 'to delete' : kind}</span></td>
${
  pending
    ? html`<td data-label="Value">${
        kind === 'delete'
          ? html`<span class="muted">deleted when applied</span>`
          : value !== undefined
            ? html`<code class="value" data-name="${name}">${Object.hasOwn(current, name) ? markedDiff(current[name] as string, value).new : value}</code>${
                Object.hasOwn(current, name)
                  ? html`<span class="small muted">now:</span> <code class="value current" data-current="${name}">${markedDiff(current[name] as string, value).old}</code>${
                      current[name] === value ? html`<span class="small muted">(unchanged)</span>` : ''
                    }`
                  : ''
              }`
            : html`<span class="hidden-value" aria-label="value hidden">••••••••</span>`
      }</td>`
    : ''
}
</tr>`
    })
    const refusedRows = push.refused.map(
      (r) => html`<tr>
<td data-label="Line">${r.line}</td>
<td data-label="Name">${r.name ? html`<code class="name">${r.name}</code>` : html`<span class="muted">(no name)</span>`}</td>
<td data-label="Reason">${r.reason}</td>
</tr>`,
    )

    let outcome = html``
    if (!pending) {
      const who = push.status === 'expired' ? html`nobody decided before it expired` : html`by ${personLabel(decider, push.decidedBy)}`
      const applied = push.status === 'applied' && readable ? await domain.changeOfPush(vault, push.id) : null
      const reverts = await Promise.all(
        (applied?.revertedBy ?? []).map(
          async (r) =>
            html`<p class="reverted">Reverted by ${r.by === null ? 'the server administrator' : personLabel(await people(r.by), r.by)} at <a href="${pagePath(deps, changePath(vault.id, r.id))}">${when(r.at)}</a>.</p>`,
        ),
      )
      outcome = html`<section class="outcome outcome-${push.status}" role="status">
<h2>${OUTCOME[push.status]}</h2>
<p>${OUTCOME[push.status]} ${when(push.decidedAt)}, ${who}.</p>
${push.status === 'applied' ? html`<p>The variables were written to ${push.environment}${push.deletes.length ? html`, and ${push.deletes.join(', ')} deleted` : ''}.</p>` : html`<p>No variable was changed.</p>`}
${push.status === 'rejected' && push.reason ? html`<p class="reason">Reason: ${push.reason}</p>` : ''}
${applied ? html`<p><a href="${pagePath(deps, changePath(vault.id, applied.change.id))}">The change it made</a> (to revert it, open it and choose Revert this change).</p>` : ''}
${reverts}
</section>`
    }

    const body = html`${extra.problem ? refusalBox(extra.problem) : ''}
<p class="crumbs"><a href="${pagePath(deps, '/')}">Your vaults</a> › <a href="${vaultUrl(deps, vault.id)}">${vault.name}</a></p>
<h1>Review a push</h1>
${outcome}
<dl class="facts">
<dt>Vault</dt><dd>${vault.name}</dd>
<dt>Environment</dt><dd>${push.environment}${env.ownersOnly ? html` <span class="badge">owners only</span>` : ''}</dd>
<dt>Sender</dt><dd>${personLabel(sender, push.senderId)}</dd>
<dt>Sent</dt><dd>${when(push.createdAt)}</dd>
<dt>${pending ? 'Expires' : 'Expiry'}</dt><dd>${when(push.expiresAt)}</dd>
<dt>Status</dt><dd><span class="status status-${push.status}">${push.status}</span></dd>
</dl>

<section>
<h2>Variables (${push.names.length})</h2>
${
  push.names.length === 0
    ? html`<p class="muted">This push holds no variables.</p>`
    : html`<table class="stack names"><thead><tr><th>Name</th><th>Change</th>${pending ? html`<th>Value</th>` : ''}</tr></thead><tbody>${nameRows}</tbody></table>`
}
${
  pending && readable && push.names.length > 0 && !revealed
    ? html`<form method="post" action="${action}/reveal" class="inline">
${csrfField(token)}
<button type="submit" class="secondary">Reveal</button>
</form>`
    : ''
}
${pending && !readable ? html`<p class="hint">Your role (${vault.role}) cannot read the values of this environment.</p>` : ''}
</section>

<section>
<h2>Refused lines (${push.refused.length})</h2>
${
  push.refused.length === 0
    ? html`<p class="muted">The sender's client refused no lines.</p>`
    : html`<p class="hint">These lines of the sender's file were not sent.</p>
<table class="stack refused"><thead><tr><th>Line</th><th>Name</th><th>Reason</th></tr></thead><tbody>${refusedRows}</tbody></table>`
}
</section>

${
  canDecide
    ? html`<section class="decide card">
<h2>Decision</h2>
<p>Apply writes every variable above to ${push.environment} at once${push.overwrites.length ? `, replacing ${push.overwrites.length} existing value${push.overwrites.length === 1 ? '' : 's'}` : ''}${push.deletes.length ? `, and deletes the ${push.deletes.length} marked "to delete"` : ''}. Variables of ${push.environment} that are not in this push stay as they are. Reject discards the push.</p>
<div class="buttons">
<form method="post" action="${action}/apply" class="inline">${csrfField(token)}<button type="submit" class="primary">Apply</button></form>
<form method="post" action="${action}/reject" class="reject">${csrfField(token)}
<label for="reject-reason">Reason (optional, shown with the push)</label>
<textarea id="reject-reason" name="reason" rows="2" maxlength="${String(MAX_REJECT_REASON)}"></textarea>
<button type="submit" class="danger">Reject</button></form>
</div>
</section>`
    : pending
      ? html`<p class="hint">${
          secondPersonRequired(vault, env) && push.senderId === person.id && mayAccess(vault, env, 'write')
            ? `${push.environment} requires a second person: someone else with write access must apply or reject your push.`
            : `Your role (${vault.role}) cannot decide this push.`
        }</p>`
      : ''
}`
    return sendPage(deps, reply, { status: extra.problem?.status ?? 200, title: 'Review a push', body, person })
  }

  app.get<{ Params: Params }>('/v/:vault/variables/imports/:import', async function reviewPage(request, reply) {
    const person = await personOrSignIn(deps, request, reply)
    if (!person) return reply
    request.envkeepOperation = `showing a push to vault ${vaultTag(request.params.vault)}`
    return render(reply, await load(person, request))
  })

  function reviewForm(
    path: string,
    operation: (tag: string) => string,
    work: (request: FastifyRequest<{ Params: Params }>, reply: FastifyReply, ctx: ReviewContext) => Promise<FastifyReply>,
  ): void {
    app.post<{ Params: Params }>(
      `/v/:vault/variables/imports/:import${path}`,
      { preHandler: app.csrfProtection },
      async function reviewFormHandler(request, reply) {
        const back = pagePath(deps, reviewPath(request.params.vault, request.params.import))
        const person = await personOrSignIn(deps, request, reply, back)
        if (!person) return reply
        request.envkeepOperation = operation(vaultTag(request.params.vault))
        let ctx: ReviewContext | null = null
        try {
          ctx = await load(person, request)
          return await work(request, reply, ctx)
        } catch (err) {
          const f = toPageFailure(err, request)
          if (!ctx || f.status >= 500) return sendErrorPage(reply, { ...f, ...(await topBar(deps, reply, person)) })
          // show the push as it is now (another person may have decided it)
          return render(reply, await load(person, request), { problem: f })
        }
      },
    )
  }

  reviewForm(
    '/reveal',
    (tag) => `revealing the values of a push to vault ${tag}`,
    async (_request, reply, ctx) => {
      const r = await domain.revealPush(ctx.actor, { vaultId: ctx.vault.id, importId: ctx.push.id })
      return render(reply, { ...ctx, ...r }, { revealed: r.values, current: r.current })
    },
  )

  for (const decision of ['applied', 'rejected'] as const) {
    const verb = decision === 'applied' ? 'apply' : 'reject'
    reviewForm(
      `/${verb}`,
      (tag) => `${decision === 'applied' ? 'applying' : 'rejecting'} a push to vault ${tag}`,
      async (request, reply, ctx) => {
        const reason = decision === 'rejected' ? field(request.body, 'reason') : undefined
        await domain.decidePush(ctx.actor, { vaultId: ctx.vault.id, importId: ctx.push.id, decision, ...(reason ? { reason } : {}) })
        return seeOther(deps, reply, reviewPath(ctx.vault.id, ctx.push.id))
      },
    )
  }
}

/**
 * An overwrite's old and new value with the part that changed marked: the
 * common start and end stay plain, the middle of each is a <mark> (by code
 * point, so no surrogate pair is split).
 */
export function markedDiff(before: string, after: string): { old: SafeHtml; new: SafeHtml } {
  const a = [...before]
  const b = [...after]
  let start = 0
  while (start < a.length && start < b.length && a[start] === b[start]) start++
  let end = 0
  while (end < a.length - start && end < b.length - start && a[a.length - 1 - end] === b[b.length - 1 - end]) end++
  const part = (cps: string[]) => {
    const head = cps.slice(0, start).join('')
    const mid = cps.slice(start, cps.length - end).join('')
    const tail = cps.slice(cps.length - end).join('')
    return html`${head}${mid ? html`<mark>${mid}</mark>` : ''}${tail}`
  }
  return { old: part(a), new: part(b) }
}

/** Stored forms as the review shows them: a reference as `→ ENVIRONMENT.NAME (reference)`. */
function shownForms(forms: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [name, form] of Object.entries(forms)) {
    const ref = referenceOf(form)
    out[name] = ref ? `→ ${targetText(ref)} (reference)` : form
  }
  return out
}

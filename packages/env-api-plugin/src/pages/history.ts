import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { referenceOf, targetText } from '../domain/references.js'
import type { Person } from '../adapters/people.js'
import type { ChangeSetSummary, VaultAccess } from '../adapters/storage.js'
import { mayAccess } from '../domain/permissions.js'
import type { ChangeView, RollbackPlan } from '../domain/history.js'
import { vaultTag } from '../errors.js'
import { csrfField, field, pagePath, personCache, personLabel, personOrSignIn, seeOther, sendPage, when, type PageDeps, topBar } from './context.js'
import { pageActor, pageDomain } from './domain.js'
import { refusalBox, sendErrorPage, toPageFailure, type PageFailure } from './error.js'
import { html, type SafeHtml } from './html.js'
import { historyPath, vaultHeader } from './vault-header.js'
import { reviewPath } from '../review-path.js'

/**
 * History and rollback pages (issue 12). Labels are part of the contract:
 * "History", "Reveal", "Revert this change", "Also revert later changes to
 * these variables", "Restore this environment to this point".
 *   GET  /v/:vault/history/:env                       change sets, newest first, paged
 *   GET  /v/:vault/history/:env/variables/:name       a variable's versions (POST …/reveal shows one)
 *   GET  /v/:vault/changes/:change                    a change set (POST …/reveal shows its values)
 *   GET  /v/:vault/changes/:change/revert|restore     the confirmation: exactly what will be written and deleted
 *   POST /v/:vault/changes/:change/revert|restore     does it, as one new change set
 */

const HOW: Readonly<Record<ChangeSetSummary['how'], string>> = Object.freeze({
  push: 'push applied',
  page: 'web page',
  admin: 'admin command',
  revert: 'revert',
  restore: 'restore',
})

export { historyPath }

export function changePath(vaultId: string, changeId: string): string {
  return `/v/${encodeURIComponent(vaultId)}/changes/${encodeURIComponent(changeId)}`
}

function variablePath(vaultId: string, environment: string, name: string): string {
  return `${historyPath(vaultId, environment)}/variables/${encodeURIComponent(name)}`
}

function nameList(names: readonly string[]): SafeHtml {
  return names.length === 0 ? html`<span class="muted">—</span>` : html`${names.map((n, i) => html`${i > 0 ? ', ' : ''}<code class="name">${n}</code>`)}`
}

function valueCell(v: string | null | undefined, revealed: boolean): SafeHtml {
  if (!revealed) return html`<span class="hidden-value" aria-label="value hidden">••••••••</span>`
  // undefined: a value recorded as unreadable when it was replaced (openHistory leaves it out)
  if (v === undefined) return html`<span class="muted">(could not be opened)</span>`
  if (v === null) return html`<span class="muted">(none)</span>`
  // a reference is kept in history as a reference: its target, never the value it led to then
  const ref = referenceOf(v)
  return ref ? html`<span class="ref">reference to <code>${targetText(ref)}</code></span>` : html`<code class="value">${v}</code>`
}

export function historyRoutes(app: FastifyInstance, deps: PageDeps): void {
  const domain = pageDomain(deps)

  async function who(people: ReturnType<typeof personCache>, id: string | null): Promise<SafeHtml> {
    return id === null ? html`<span class="person">the server administrator</span>` : personLabel(await people(id), id)
  }

  async function changeRow(people: ReturnType<typeof personCache>, vaultId: string, c: ChangeSetSummary): Promise<SafeHtml> {
    return html`<tr>
<td data-label="When"><a href="${pagePath(deps, changePath(vaultId, c.id))}">${when(c.at)}</a></td>
<td data-label="Who">${await who(people, c.by)}</td>
<td data-label="How">${HOW[c.how]}</td>
<td data-label="Added">${nameList(c.added)}</td>
<td data-label="Changed">${nameList(c.changed)}</td>
<td data-label="Deleted">${nameList(c.deleted)}</td>
</tr>`
  }

  /**
   * The vault's head with History as the current tab, the environments the person may read
   * (History switches between them), and, below an environment's history, the way back to it.
   */
  async function crumbs(vault: VaultAccess, env: string, back = true): Promise<SafeHtml> {
    const readable = vault.environments.filter((e) => mayAccess(vault, e, 'read'))
    return html`${await vaultHeader(deps, vault, 'history', { env, ownHeading: true })}
<nav class="envs" aria-label="Environments">${readable.map(
      (e) =>
        html`<a href="${pagePath(deps, historyPath(vault.id, e.name))}"${e.name === env ? html` aria-current="true" class="current"` : ''}>${e.name}${e.ownersOnly ? html` <span class="badge">owners only</span>` : ''}</a>`,
    )}</nav>
${back ? html`<p class="crumbs"><a href="${pagePath(deps, historyPath(vault.id, env))}">History of ${env}</a></p>` : ''}`
  }

  /** GET pages: the signed-in person or a sign-in redirect; failures render as error pages. */
  function page<P>(
    url: string,
    operation: (request: FastifyRequest<{ Params: P }>) => string,
    work: (request: FastifyRequest<{ Params: P }>, reply: FastifyReply, person: Person) => Promise<FastifyReply>,
  ): void {
    app.get<{ Params: P }>(url, async function historyPage(request, reply) {
      const person = await personOrSignIn(deps, request, reply)
      if (!person) return reply
      request.envkeepOperation = operation(request)
      return work(request, reply, person)
    })
  }

  // ---- the history of an environment -----------------------------------------

  page<{ vault: string; env: string }>(
    '/v/:vault/history/:env',
    (r) => `showing the history of vault ${vaultTag(r.params.vault)}`,
    async (request, reply, person) => {
      const before = Number((request.query as Record<string, unknown>)?.before)
      const r = await domain.listHistory(pageActor(person, request), {
        vaultId: request.params.vault,
        environment: request.params.env,
        beforeSeq: Number.isSafeInteger(before) && before > 0 ? before : undefined,
      })
      const people = personCache(deps)
      const rows = await Promise.all(r.changes.map((c) => changeRow(people, r.vault.id, c)))
      const body = html`${await crumbs(r.vault, r.env.name, false)}
<h1>History of ${r.env.name}</h1>
<p class="hint">Every change of this environment's values, newest first. Open one to see its values, revert it, or restore the environment to that point.</p>
${
  rows.length === 0
    ? html`<p class="muted">No change recorded yet.</p>`
    : html`<table class="stack history"><thead><tr><th>When</th><th>Who</th><th>How</th><th>Added</th><th>Changed</th><th>Deleted</th></tr></thead><tbody>${rows}</tbody></table>`
}
${r.nextBeforeSeq !== null ? html`<p><a href="${pagePath(deps, `${historyPath(r.vault.id, r.env.name)}?before=${r.nextBeforeSeq}`)}" rel="next">Older changes</a></p>` : ''}`
      return sendPage(deps, reply, { title: `History of ${r.env.name}`, body, person })
    },
  )

  // ---- a variable's versions ----------------------------------------------------

  async function renderVariable(
    request: FastifyRequest<{ Params: { vault: string; env: string; name: string } }>,
    reply: FastifyReply,
    person: Person,
    shown?: { change: string; before: string | null; after: string | null },
  ): Promise<FastifyReply> {
    const r = await domain.variableHistory(pageActor(person, request), {
      vaultId: request.params.vault,
      environment: request.params.env,
      name: request.params.name,
    })
    const people = personCache(deps)
    const token = reply.generateCsrf()
    const action = pagePath(deps, `${variablePath(r.vault.id, r.env.name, request.params.name)}/reveal`)
    const rows = await Promise.all(
      r.versions.map(async (v) => {
        const open = shown?.change === v.changeSet.id
        return html`<tr>
<td data-label="When"><a href="${pagePath(deps, changePath(r.vault.id, v.changeSet.id))}">${when(v.changeSet.at)}</a></td>
<td data-label="Who">${await who(people, v.changeSet.by)}</td>
<td data-label="How">${HOW[v.changeSet.how]}</td>
<td data-label="Change"><span class="mark mark-${v.entry.kind}">${v.entry.kind}</span></td>
<td data-label="Value">${v.entry.kind === 'deleted' ? html`<span class="muted">(deleted)</span>` : valueCell(shown?.after, open)}${
          v.entry.kind !== 'deleted' && !open
            ? html`<form method="post" action="${action}" class="inline">${csrfField(token)}<input type="hidden" name="change" value="${v.changeSet.id}"><button type="submit" class="secondary">Reveal</button></form>`
            : ''
        }</td>
</tr>`
      }),
    )
    const body = html`${await crumbs(r.vault, r.env.name)}
<h1>Versions of <code class="name">${request.params.name}</code> in ${r.env.name}</h1>
${
  rows.length === 0
    ? html`<p class="muted">No version of this variable is kept.</p>`
    : html`<table class="stack versions"><thead><tr><th>When</th><th>Who</th><th>How</th><th>Change</th><th>Value</th></tr></thead><tbody>${rows}</tbody></table>`
}`
    return sendPage(deps, reply, { title: `Versions of ${request.params.name}`, body, person })
  }

  page<{ vault: string; env: string; name: string }>(
    '/v/:vault/history/:env/variables/:name',
    (r) => `showing the versions of a variable of vault ${vaultTag(r.params.vault)}`,
    (request, reply, person) => renderVariable(request, reply, person),
  )

  app.post<{ Params: { vault: string; env: string; name: string } }>(
    '/v/:vault/history/:env/variables/:name/reveal',
    { preHandler: app.csrfProtection },
    async function revealVersion(request, reply) {
      const back = pagePath(deps, variablePath(request.params.vault, request.params.env, request.params.name))
      const person = await personOrSignIn(deps, request, reply, back)
      if (!person) return reply
      request.envkeepOperation = `revealing a version of a variable of vault ${vaultTag(request.params.vault)}`
      const change = field(request.body, 'change')
      const r = await domain.revealChange(pageActor(person, request), { vaultId: request.params.vault, changeSetId: change, name: request.params.name })
      if (r.change.environment !== request.params.env) return seeOther(deps, reply, variablePath(request.params.vault, request.params.env, request.params.name))
      return renderVariable(request, reply, person, { change, before: r.before[request.params.name] ?? null, after: r.after[request.params.name] ?? null })
    },
  )

  // ---- a change set ---------------------------------------------------------------

  async function renderChange(
    reply: FastifyReply,
    person: Person,
    view: ChangeView,
    extra: { revealed?: { before: Record<string, string | null>; after: Record<string, string | null> }; problem?: PageFailure | null } = {},
  ): Promise<FastifyReply> {
    const { vault, change } = view
    const people = personCache(deps)
    const token = reply.generateCsrf()
    const base = pagePath(deps, changePath(vault.id, change.id))
    const revealed = extra.revealed
    const rows = change.entries.map(
      (e) => html`<tr>
<td data-label="Name"><a href="${pagePath(deps, variablePath(vault.id, change.environment, e.name))}"><code class="name">${e.name}</code></a></td>
<td data-label="Change"><span class="mark mark-${e.kind}">${e.kind}</span></td>
<td data-label="Before">${e.kind === 'added' ? html`<span class="muted">(none)</span>` : valueCell(revealed?.before[e.name], Boolean(revealed))}</td>
<td data-label="After">${e.kind === 'deleted' ? html`<span class="muted">(none)</span>` : valueCell(revealed?.after[e.name], Boolean(revealed))}</td>
</tr>`,
    )
    const reverts = await Promise.all(
      view.revertedBy.map(
        async (r) => html`<li>Reverted by ${await who(people, r.by)} at <a href="${pagePath(deps, changePath(vault.id, r.id))}">${when(r.at)}</a></li>`,
      ),
    )
    const writable = vault.role === 'owner' || (vault.role === 'editor' && !view.env.ownersOnly)
    const body = html`${extra.problem ? refusalBox(extra.problem) : ''}${await crumbs(vault, change.environment)}
<h1>Change to ${change.environment}</h1>
<dl class="facts">
<dt>When</dt><dd>${when(change.at)}</dd>
<dt>Who</dt><dd>${await who(people, change.by)}</dd>
<dt>How</dt><dd>${HOW[change.how]}${
      change.how === 'push' && change.ref
        ? html` (<a href="${pagePath(deps, reviewPath(vault.id, change.ref))}">the push</a>)`
        : (change.how === 'revert' || change.how === 'restore') && change.ref
          ? html` of <a href="${pagePath(deps, changePath(vault.id, change.ref))}">an earlier change</a>`
          : ''
    }</dd>
</dl>
${reverts.length > 0 ? html`<ul class="reverted">${reverts}</ul>` : ''}
<table class="stack changes"><thead><tr><th>Name</th><th>Change</th><th>Before</th><th>After</th></tr></thead><tbody>${rows}</tbody></table>
${
  revealed || change.entries.length === 0
    ? ''
    : html`<form method="post" action="${base}/reveal" class="inline">${csrfField(token)}<button type="submit" class="secondary">Reveal</button></form>`
}
${
  writable
    ? html`<div class="buttons">
<a class="button" href="${base}/revert">Revert this change</a>
<a class="button" href="${base}/restore">Restore this environment to this point</a>
</div>`
    : html`<p class="hint">Your role (${vault.role}) cannot change ${view.env.ownersOnly ? 'owners-only environments' : 'this environment'}.</p>`
}`
    return sendPage(deps, reply, { status: extra.problem?.status ?? 200, title: `Change to ${change.environment}`, body, person })
  }

  page<{ vault: string; change: string }>(
    '/v/:vault/changes/:change',
    (r) => `showing a change of vault ${vaultTag(r.params.vault)}`,
    async (request, reply, person) =>
      renderChange(reply, person, await domain.loadChange(pageActor(person, request), { vaultId: request.params.vault, changeSetId: request.params.change })),
  )

  app.post<{ Params: { vault: string; change: string } }>(
    '/v/:vault/changes/:change/reveal',
    { preHandler: app.csrfProtection },
    async function revealChange(request, reply) {
      const person = await personOrSignIn(deps, request, reply, pagePath(deps, changePath(request.params.vault, request.params.change)))
      if (!person) return reply
      request.envkeepOperation = `revealing the values of a change of vault ${vaultTag(request.params.vault)}`
      const r = await domain.revealChange(pageActor(person, request), { vaultId: request.params.vault, changeSetId: request.params.change })
      return renderChange(reply, person, r, { revealed: { before: r.before, after: r.after } })
    },
  )

  // ---- revert and restore: a confirmation, then the change ----------------------

  async function renderPlan(reply: FastifyReply, person: Person, kind: 'revert' | 'restore', plan: RollbackPlan, problem?: PageFailure): Promise<FastifyReply> {
    const { vault, change } = plan.view
    const token = reply.generateCsrf()
    const base = pagePath(deps, changePath(vault.id, change.id))
    const title = kind === 'revert' ? 'Revert this change' : 'Restore this environment to this point'
    const nothing = plan.write.length === 0 && plan.delete.length === 0
    const body = html`${problem ? refusalBox(problem) : ''}${await crumbs(vault, change.environment)}
<h1>${title}</h1>
<p>${
      kind === 'revert'
        ? html`Every variable of the <a href="${base}">change of ${when(change.at)}</a> goes back to the value it had before it, in ${change.environment}.`
        : html`Every variable of ${change.environment} goes back to its value right after the <a href="${base}">change of ${when(change.at)}</a>.`
    } Nothing has changed yet.</p>
${
  plan.propose
    ? html`<p class="hint second-person">This environment requires a second person: this is proposed as a push, and someone else applies it.</p>`
    : ''
}
<section class="plan">
<h2>Will be written (${plan.write.length})</h2>
<p>${nameList(plan.write)}</p>
<h2>Will be deleted (${plan.delete.length})</h2>
<p>${nameList(plan.delete)}</p>
${
  kind === 'revert' && plan.conflicts.length > 0
    ? html`<h2>Changed again since (${plan.conflicts.length})</h2>
<p>${nameList(plan.conflicts)}</p>
<p class="hint">${plan.alsoLater ? 'These are reverted too: their later changes are undone.' : 'These are left alone: they were changed again after this change.'}</p>
<form method="get" action="${base}/revert" class="inline">
<label class="check"><input type="checkbox" name="also" value="1"${plan.alsoLater ? html` checked` : ''}> <span>Also revert later changes to these variables</span></label>
<button type="submit" class="secondary">Show what this writes</button>
</form>`
    : ''
}
</section>
${
  nothing
    ? html`<p class="hint">There is nothing to write: the environment already holds these values.</p>`
    : html`<form method="post" action="${base}/${kind}" class="inline">
${csrfField(token)}
<input type="hidden" name="version" value="${String(plan.version)}">
<input type="hidden" name="also" value="${plan.alsoLater ? '1' : ''}">
<button type="submit" class="primary">${plan.propose ? 'Propose' : kind === 'revert' ? 'Revert' : 'Restore'}</button>
</form>`
}
<p><a href="${base}">Cancel</a></p>`
    return sendPage(deps, reply, { status: problem?.status ?? 200, title, body, person })
  }

  for (const kind of ['revert', 'restore'] as const) {
    page<{ vault: string; change: string }>(
      `/v/:vault/changes/:change/${kind}`,
      (r) => `preparing to ${kind} a change of vault ${vaultTag(r.params.vault)}`,
      async (request, reply, person) => {
        const also = (request.query as Record<string, unknown>)?.also === '1'
        const plan = await domain.planRollback(pageActor(person, request), {
          vaultId: request.params.vault,
          changeSetId: request.params.change,
          kind,
          alsoLater: also,
        })
        return renderPlan(reply, person, kind, plan)
      },
    )

    app.post<{ Params: { vault: string; change: string } }>(
      `/v/:vault/changes/:change/${kind}`,
      { preHandler: app.csrfProtection },
      async function rollBack(request, reply) {
        const back = pagePath(deps, `${changePath(request.params.vault, request.params.change)}/${kind}`)
        const person = await personOrSignIn(deps, request, reply, back)
        if (!person) return reply
        request.envkeepOperation = `${kind === 'revert' ? 'reverting' : 'restoring'} a change of vault ${vaultTag(request.params.vault)}`
        const actor = pageActor(person, request)
        const alsoLater = field(request.body, 'also') === '1'
        const version = Number(field(request.body, 'version'))
        const input = { vaultId: request.params.vault, changeSetId: request.params.change, kind, alsoLater }
        try {
          const r = await domain.rollBack(actor, { ...input, version: Number.isSafeInteger(version) ? version : -1 })
          if (r.proposed) return seeOther(deps, reply, reviewPath(r.view.vault.id, r.proposed.id))
          return seeOther(deps, reply, r.changeSetId ? changePath(r.view.vault.id, r.changeSetId) : historyPath(r.view.vault.id, r.view.change.environment))
        } catch (err) {
          const f = toPageFailure(err, request)
          if (f.status !== 409) return sendErrorPage(reply, { ...f, ...(await topBar(deps, reply, person)) })
          // the environment changed since the confirmation: show the list as it is now
          return renderPlan(reply, person, kind, await domain.planRollback(actor, input), f)
        }
      },
    )
  }
}

import type { FastifyInstance, FastifyReply } from 'fastify'
import type { Person } from '../adapters/people.js'
import type { SignInRecord } from '../adapters/oauth-store.js'
import { csrfField, field, pagePath, personOrSignIn, seeOther, sendPage, when, type PageDeps, topBar } from './context.js'
import { signInState } from '../domain/sign-ins.js'
import { pageActor } from './domain.js'
import { refusalBox, sendErrorPage, toPageFailure, type PageFailure } from './error.js'
import { html } from './html.js'

/** The scope that lets a sign-in send .env files. */
export const PUSH_SCOPE = 'env:push'

function clientLabel(deps: PageDeps, s: SignInRecord, names: ReadonlyMap<string, string>): string {
  if (s.clientId === deps.opts.cliClientId) return 'envkeep command line'
  const name = names.get(s.clientId)
  return name ? `${name} (MCP)` : s.clientId
}

/** `/sign-ins`: the person's command-line sign-ins, each with "Revoke". */
export function signInRoutes(app: FastifyInstance, deps: PageDeps): void {
  async function render(reply: FastifyReply, person: Person, problem: PageFailure | null, notice: string | null): Promise<FastifyReply> {
    const now = deps.opts.now()
    const signIns = await deps.domain.listSignIns(pageActor(person, reply.request))
    const names = await deps.domain.clientNamesOf(signIns.filter((s) => s.clientId !== deps.opts.cliClientId))
    const token = reply.generateCsrf()
    const rows = signIns.map((s) => {
      const state = signInState(s, now)
      return html`<tr>
<td data-label="Client">${clientLabel(deps, s, names)}</td>
<td data-label="Created">${when(s.createdAt)}</td>
<td data-label="Last used">${when(s.lastUsedAt)}</td>
<td data-label="Can push">${s.scopes.includes(PUSH_SCOPE) || s.scopes.includes('mcp:propose') ? 'yes' : 'no'}</td>
<td data-label="Status"><span class="status status-${state}">${state}</span>${state === 'revoked' ? html` ${when(s.revokedAt)}` : state === 'active' ? html` <span class="muted small">until ${when(s.expiresAt)}</span>` : ''}</td>
<td>${
        state === 'active'
          ? html`<form method="post" action="${pagePath(deps, '/sign-ins/revoke')}" class="inline" data-confirm="Revoke this sign-in? The command line using it will have to sign in again.">
${csrfField(token)}<input type="hidden" name="sign_in" value="${s.id}">
<button type="submit" class="danger">Revoke</button>
</form>`
          : ''
      }</td>
</tr>`
    })
    const body = html`${problem ? refusalBox(problem) : ''}
${notice ? html`<p class="notice" role="status">${notice}</p>` : ''}
<p class="crumbs"><a href="${pagePath(deps, '/')}">Your vaults</a></p>
<h1>Sign-ins</h1>
<p class="hint">Each time you run <code>envkeep login</code>, or connect an AI assistant (MCP), and allow it, a sign-in is made. Revoke the ones you no longer use.</p>
${
  signIns.length === 0
    ? html`<p class="muted">You have no command-line sign-ins.</p>`
    : html`<table class="stack"><thead><tr><th>Client</th><th>Created</th><th>Last used</th><th>Can push</th><th>Status</th><th></th></tr></thead><tbody>${rows}</tbody></table>`
}`
    return sendPage(deps, reply, { status: problem?.status ?? 200, title: 'Sign-ins', body, person })
  }

  app.get('/sign-ins', async function signInsPage(request, reply) {
    const person = await personOrSignIn(deps, request, reply)
    if (!person) return reply
    const done = field(request.query, 'done') === 'revoked' ? 'The sign-in was revoked.' : null
    return render(reply, person, null, done)
  })

  app.post('/sign-ins/revoke', { preHandler: app.csrfProtection }, async function revokeSignIn(request, reply) {
    const person = await personOrSignIn(deps, request, reply, pagePath(deps, '/sign-ins'))
    if (!person) return reply
    request.envkeepOperation = 'revoking a sign-in'
    try {
      await deps.domain.revokeSignIn(pageActor(person, request), field(request.body, 'sign_in'))
      return seeOther(deps, reply, '/sign-ins?done=revoked')
    } catch (err) {
      const f = toPageFailure(err, request)
      if (f.status >= 500) return sendErrorPage(reply, { ...f, ...(await topBar(deps, reply, person)) })
      return render(reply, person, f, null)
    }
  })
}

import type { FastifyInstance, FastifyReply } from 'fastify'
import type { Person } from '../adapters/people.js'
import { mayAccess } from '../domain/permissions.js'
import { MAX_VAULT_NAME } from '../domain/rules.js'
import { csrfField, field, pagePath, personOrSignIn, seeOther, sendPage, waitingFor, type PageDeps, topBar } from './context.js'
import { pageActor, pageDomain } from './domain.js'
import { refusalBox, sendErrorPage, toPageFailure, type PageFailure } from './error.js'
import { html } from './html.js'
import { pushesWaitingText } from './layout.js'

export { DEFAULT_ENVIRONMENTS, MAX_VAULT_NAME, vaultNameProblem } from '../domain/rules.js'

/**
 * `/`: the person's vaults, each with the count of pushes waiting for the
 * person there (domain pushesWaiting: one small query per vault where the
 * person decides anything, up to WAITING_VAULTS), and a form to create one.
 */
export function vaultListRoutes(app: FastifyInstance, deps: PageDeps): void {
  const domain = pageDomain(deps)
  async function render(reply: FastifyReply, person: Person, problem: PageFailure | null, notice: string | null = null) {
    const vaults = await domain.listVaults(person.id)
    const waiting = await waitingFor(deps, reply, person, vaults)
    const token = reply.generateCsrf()
    const rows = vaults.map((v) => {
      const n = waiting?.byVault.get(v.id) ?? 0
      return html`<li><a href="${pagePath(deps, `/v/${encodeURIComponent(v.id)}`)}">${v.name}</a>
<span class="role role-${v.role}">${v.role}</span>${
        n > 0 ? html`<a class="badge waiting-count" href="${pagePath(deps, `/v/${encodeURIComponent(v.id)}/pushes`)}">${pushesWaitingText(n)}</a>` : ''
      }
<span class="muted">${v.environments.filter((e) => mayAccess(v, e, 'read')).length} of ${v.environments.length} environments readable</span></li>`
    })
    const body = html`${problem ? refusalBox(problem) : ''}${notice ? html`<p class="notice" role="status">${notice}</p>` : ''}
<h1>Your vaults</h1>
${vaults.length === 0 ? html`<p class="muted">You are not a member of any vault yet.</p>` : html`<ul class="vaults">${rows}</ul>`}
<section class="card">
<h2>Create a vault</h2>
<form method="post" action="${pagePath(deps, '/vaults')}">
${csrfField(token)}
<label for="vault-name">Vault name</label>
<input id="vault-name" name="name" required maxlength="${MAX_VAULT_NAME}" autocomplete="off">
<p class="hint">You become its owner. It starts with the environments development, preview and production (owners only).</p>
<button type="submit">Create vault</button>
</form>
</section>`
    return sendPage(deps, reply, { status: problem?.status ?? 200, title: 'Your vaults', body, person, waiting })
  }

  app.get('/', async function vaultListPage(request, reply) {
    const person = await personOrSignIn(deps, request, reply)
    if (!person) return reply
    const done = (request.query as Record<string, unknown> | undefined)?.done
    return render(reply, person, null, done === 'vault_deleted' ? 'The vault was deleted.' : null)
  })

  app.post('/vaults', { preHandler: app.csrfProtection }, async function createVault(request, reply) {
    const person = await personOrSignIn(deps, request, reply, pagePath(deps, '/'))
    if (!person) return reply
    request.envkeepOperation = 'creating a vault'
    try {
      const vault = await domain.createVault(pageActor(person, request), { name: field(request.body, 'name') })
      return seeOther(deps, reply, `/v/${encodeURIComponent(vault.id)}`)
    } catch (err) {
      const f = toPageFailure(err, request)
      if (f.status >= 500) return sendErrorPage(reply, { ...f, ...(await topBar(deps, reply, person)) })
      return render(reply, person, f)
    }
  })
}

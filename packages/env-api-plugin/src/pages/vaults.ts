import { randomUUID } from 'node:crypto'
import type { FastifyInstance, FastifyReply } from 'fastify'
import type { Person } from '../adapters/people.js'
import type { EnvironmentInfo } from '../adapters/vault-store.js'
import { canReadEnvironment } from '../access.js'
import { csrfField, field, pagePath, personOrSignIn, seeOther, sendPage, type PageDeps } from './context.js'
import { pageError, refusalBox, sendErrorPage, toPageFailure, type PageFailure } from './error.js'
import { html } from './html.js'

/** A new vault's environments: production is owners-only. */
export const DEFAULT_ENVIRONMENTS: readonly EnvironmentInfo[] = Object.freeze([
  { name: 'development', ownersOnly: false },
  { name: 'preview', ownersOnly: false },
  { name: 'production', ownersOnly: true },
])

export const MAX_VAULT_NAME = 100

/** Why a vault name is refused, or null. Never repeats the name. */
export function vaultNameProblem(name: string): string | null {
  if (name.length === 0) return 'a vault needs a name'
  if (name.length > MAX_VAULT_NAME) return `a vault name must be at most ${MAX_VAULT_NAME} characters`
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(name)) return 'a vault name must not hold control characters'
  return null
}

/** `/`: the person's vaults, and a form to create one. */
export function vaultListRoutes(app: FastifyInstance, deps: PageDeps): void {
  async function render(reply: FastifyReply, person: Person, problem: PageFailure | null) {
    const vaults = await deps.opts.storage.listVaults(person.id)
    const token = reply.generateCsrf()
    const rows = vaults.map(
      (v) => html`<li><a href="${pagePath(deps, `/v/${encodeURIComponent(v.id)}`)}">${v.name}</a>
<span class="role role-${v.role}">${v.role}</span>
<span class="muted">${v.environments.filter((e) => canReadEnvironment(v.role, e)).length} of ${v.environments.length} environments readable</span></li>`,
    )
    const body = html`${problem ? refusalBox(problem) : ''}
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
    return sendPage(deps, reply, { status: problem?.status ?? 200, title: 'Your vaults', body, person })
  }

  app.get('/', async function vaultListPage(request, reply) {
    const person = await personOrSignIn(deps, request, reply)
    if (!person) return reply
    return render(reply, person, null)
  })

  app.post('/vaults', { preHandler: app.csrfProtection }, async function createVault(request, reply) {
    const person = await personOrSignIn(deps, request, reply, pagePath(deps, '/'))
    if (!person) return reply
    request.envkeepOperation = 'creating a vault'
    try {
      const name = field(request.body, 'name').trim()
      const problem = vaultNameProblem(name)
      if (problem) throw pageError(400, 'web app', problem)
      const plans = Object.keys(deps.opts.plans)
      const plan = plans.includes('self-hosted') ? 'self-hosted' : (plans[0] ?? 'self-hosted')
      const id = randomUUID()
      const now = deps.opts.now()
      const vault = await deps.opts.storage.createVault(
        { id, name, ownerId: person.id, plan, environments: DEFAULT_ENVIRONMENTS, now },
        { vaultId: id, at: now, personId: person.id, signInId: null, clientId: null, action: 'vault_created', environment: null, names: [], address: request.ip ?? null, subject: null, detail: null },
      )
      return seeOther(deps, reply, `/v/${encodeURIComponent(vault.id)}`)
    } catch (err) {
      const f = toPageFailure(err, request)
      if (f.status >= 500) return sendErrorPage(reply, { ...f, personName: person.name, basePath: deps.opts.basePath })
      return render(reply, person, f)
    }
  })
}

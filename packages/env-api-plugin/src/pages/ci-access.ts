import type { FastifyInstance, FastifyReply } from 'fastify'
import type { CiIdentityRecord } from '../adapters/ci-identity-store.js'
import type { Person } from '../adapters/people.js'
import type { VaultAccess } from '../adapters/vault-store.js'
import { CI_ISSUER_PRESETS } from '../domain/ci-identities.js'
import { subjectPatternProblem } from '../oauth/workload/subject-pattern.js'
import { vaultTag } from '../errors.js'
import { csrfField, field, personOrSignIn, seeOther, sendPage, when, type PageDeps, topBar } from './context.js'
import { pageActor, pageDomain } from './domain.js'
import { refusalBox, sendErrorPage, toPageFailure, type PageFailure } from './error.js'
import { html } from './html.js'
import { vaultUrl } from './vault.js'

type Params = { vault: string }

const NOTICES: Readonly<Record<string, string>> = Object.freeze({
  added: 'The CI identity was added. CI runs whose identity token matches can now read with it.',
  removed: 'The CI identity was removed; its tokens no longer work.',
})

/** `k=v` lines of the "Required claims" box → claims. */
function claimsOf(text: string): Record<string, string> {
  const out: Record<string, string> = {}
  for (const line of text.split(/\r?\n/)) {
    const t = line.trim()
    if (!t) continue
    const at = t.indexOf('=')
    out[at < 0 ? t : t.slice(0, at).trim()] = at < 0 ? '' : t.slice(at + 1).trim()
  }
  return out
}

function render(
  deps: PageDeps,
  reply: FastifyReply,
  v: { vault: VaultAccess; person: Person; identities: readonly CiIdentityRecord[]; problem?: PageFailure | null; notice?: string | null },
): Promise<FastifyReply> {
  const csrf = csrfField(reply.generateCsrf())
  const base = `${vaultUrl(deps, v.vault.id)}/ci`
  const rows = v.identities.map(
    (i) => html`<tr>
<td>${i.name}</td>
<td><code>${i.issuer}</code></td>
<td><code>${i.audience}</code></td>
<td><code>${i.subjectPattern}</code>${Object.entries(i.requiredClaims).map(([k, val]) => html`<br><code>${k}=${val}</code>`)}${
      // added before the rule: it still signs in, but claims subjects by wildcard alone
      subjectPatternProblem(i.subjectPattern)
        ? html`<br><span class="warning">This pattern is no longer accepted: it does not write out the repository or project. Remove it and add one that does.</span>`
        : ''
    }</td>
<td>${i.role}</td>
<td>${i.environments ? i.environments.join(', ') : html`<span class="muted">all its role reads</span>`}</td>
<td>${when(i.createdAt)}</td>
<td><form method="post" action="${base}/remove" class="inline">${csrf}<input type="hidden" name="identity" value="${i.id}"><button type="submit" class="secondary">Remove</button></form></td>
</tr>`,
  )
  const envOptions = v.vault.environments.map(
    (e) => html`<label class="check"><input type="checkbox" name="environments" value="${e.name}"> ${e.name}${e.ownersOnly ? ' (owners only)' : ''}</label>`,
  )
  const body = html`<p><a href="${vaultUrl(deps, v.vault.id)}">← ${v.vault.name}</a></p>
<h1>CI access</h1>
${v.problem ? refusalBox(v.problem) : ''}
${v.notice ? html`<p class="notice" role="status">${v.notice}</p>` : ''}
<p>A CI identity lets CI runs (GitHub Actions, GitLab CI, any OIDC issuer) read this vault's variables with their own short-lived identity token: nothing secret is stored in the CI. It reads only; it never pushes, decides a push or uses these pages.</p>
${
  rows.length > 0
    ? html`<table><thead><tr><th>Name</th><th>Issuer</th><th>Audience</th><th>Subject and claims</th><th>Role</th><th>Environments</th><th>Added</th><th></th></tr></thead><tbody>${rows}</tbody></table>`
    : html`<p class="muted">No CI identity yet.</p>`
}
<h2>Add a CI identity</h2>
<form method="post" action="${base}/add">${csrf}
<p><label>Name <input name="name" required maxlength="100" placeholder="deploy"></label></p>
<p><label>Issuer <input name="issuer" required list="ci-issuers" placeholder="${CI_ISSUER_PRESETS.github}"></label>
<datalist id="ci-issuers">${Object.entries(CI_ISSUER_PRESETS).map(([k, u]) => html`<option value="${u}">${k === 'github' ? 'GitHub Actions' : 'GitLab.com'}</option>`)}</datalist></p>
<p><label>Audience <input name="audience" required maxlength="512" value="${deps.opts.baseUrl}"></label></p>
<p><label>Subject pattern <input name="subject" required maxlength="512" placeholder="repo:acme/shop:ref:refs/heads/main"></label><br><span class="muted">The whole <code>sub</code> claim; <code>*</code> matches any run of characters.</span></p>
<p><label>Required claims (one <code>name=value</code> a line, optional)<br><textarea name="claims" rows="2" placeholder="environment=production"></textarea></label></p>
<p><label>Reads as <select name="role"><option value="editor">editor</option><option value="owner">owner</option></select></label></p>
<fieldset><legend>Limited to these environments (none ticked: every environment its role reads)</legend>${envOptions}</fieldset>
<p><button type="submit">Add CI identity</button></p>
</form>`
  return sendPage(deps, reply, { status: v.problem?.status ?? 200, title: `CI access · ${v.vault.name}`, body, person: v.person })
}

/** "CI access" of a vault (owners): list, add and remove CI identities. Every rule is the domain layer's. */
export function ciAccessRoutes(app: FastifyInstance, deps: PageDeps): void {
  const domain = pageDomain(deps)

  app.get<{ Params: Params }>('/v/:vault/ci', async function ciAccessPage(request, reply) {
    const person = await personOrSignIn(deps, request, reply)
    if (!person) return reply
    request.envkeepOperation = `showing CI access of vault ${vaultTag(request.params.vault)}`
    const actor = pageActor(person, request)
    const vault = await domain.locateVault(actor, request.params.vault)
    const identities = await domain.listCiIdentities(actor, vault.id)
    return render(deps, reply, { vault, person, identities, notice: NOTICES[field(request.query, 'done')] ?? null })
  })

  for (const [path, phrase] of [
    ['/add', 'adding a CI identity to'],
    ['/remove', 'removing a CI identity from'],
  ] as const) {
    app.post<{ Params: Params }>(`/v/:vault/ci${path}`, { preHandler: app.csrfProtection }, async function ciAccessForm(request, reply) {
      const person = await personOrSignIn(deps, request, reply, `${vaultUrl(deps, request.params.vault)}/ci`)
      if (!person) return reply
      request.envkeepOperation = `${phrase} vault ${vaultTag(request.params.vault)}`
      const actor = pageActor(person, request)
      try {
        if (path === '/add') {
          const raw = (request.body as Record<string, unknown> | null)?.environments
          const environments = typeof raw === 'string' ? [raw] : Array.isArray(raw) ? raw.filter((e): e is string => typeof e === 'string') : []
          const identity = await domain.addCiIdentity(actor, {
            vaultId: request.params.vault,
            name: field(request.body, 'name'),
            issuer: field(request.body, 'issuer'),
            audience: field(request.body, 'audience'),
            subjectPattern: field(request.body, 'subject'),
            requiredClaims: claimsOf(field(request.body, 'claims')),
            role: field(request.body, 'role'),
            environments,
          })
          return seeOther(deps, reply, `/v/${encodeURIComponent(identity.vaultId)}/ci?done=added`)
        }
        const removed = await domain.removeCiIdentity(actor, { vaultId: request.params.vault, identity: field(request.body, 'identity') })
        return seeOther(deps, reply, `/v/${encodeURIComponent(removed.vaultId)}/ci?done=removed`)
      } catch (err) {
        const f = toPageFailure(err, request)
        const vault = f.status >= 500 ? null : await domain.locateVault(actor, request.params.vault).catch(() => null)
        const identities = vault ? await domain.listCiIdentities(actor, vault.id).catch(() => null) : null
        if (!vault || !identities) return sendErrorPage(reply, { ...f, ...(await topBar(deps, reply, person)) })
        return render(deps, reply, { vault, person, identities, problem: f })
      }
    })
  }
}

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Person } from '../adapters/people.js'
import type { VaultAccess } from '../adapters/vault-store.js'
import { secondPersonRequired } from '../domain/vault-admin.js'
import { vaultTag } from '../errors.js'
import { csrfField, field, pagePath, personOrSignIn, seeOther, sendPage, type PageDeps, topBar } from './context.js'
import { pageActor, pageDomain } from './domain.js'
import { refusalBox, sendErrorPage, toPageFailure, type PageFailure } from './error.js'
import { html } from './html.js'
import { settingsPath, vaultHeader } from './vault-header.js'
import { vaultUrl } from './vault.js'

/**
 * A vault's settings (issue 14), for owners: "Rename", each environment's
 * rules ("Owners only", "Require a second person"), and "Delete vault"
 * after typing its name. Every rule is the domain layer's.
 *   GET  /v/:vault/settings
 *   POST /v/:vault/settings/rename | /environment | /delete
 */

export { settingsPath }

const DONE: Readonly<Record<string, string>> = Object.freeze({
  renamed: 'The vault was renamed.',
  environment: 'The environment was changed.',
})

export function settingsRoutes(app: FastifyInstance, deps: PageDeps): void {
  const domain = pageDomain(deps)

  async function render(reply: FastifyReply, person: Person, vault: VaultAccess, o: { problem?: PageFailure; done?: string } = {}): Promise<FastifyReply> {
    const token = reply.generateCsrf()
    const base = pagePath(deps, settingsPath(vault.id))
    const owner = vault.role === 'owner'
    // "Allow personal overrides" (issue 24): never offered on an owners-only environment
    const overridesOn = new Map<string, boolean>()
    for (const e of vault.environments)
      if (!e.ownersOnly)
        overridesOn.set(e.name, (await domain.describeOverrides(pageActor(person, reply.request), { vaultId: vault.id, environment: e.name })).allowed)
    const envRows = vault.environments.map(
      (e) => html`<tr>
<td data-label="Environment"><code class="name">${e.name}</code></td>
<td data-label="Rules">${
        owner
          ? html`<form method="post" action="${base}/environment" class="inline env-rules">
${csrfField(token)}<input type="hidden" name="environment" value="${e.name}">
<label><input type="checkbox" name="owners_only"${e.ownersOnly ? html` checked` : ''}> Owners only</label>
<label><input type="checkbox" name="second_person"${secondPersonRequired({ ...vault, requireSecondPerson: false }, e) ? html` checked` : ''}> Require a second person</label>
<button type="submit" class="secondary">Save</button>
</form>${
              e.ownersOnly
                ? ''
                : html`<form method="post" action="${base}/overrides" class="inline env-overrides">
${csrfField(token)}<input type="hidden" name="environment" value="${e.name}"><input type="hidden" name="allow" value="${overridesOn.get(e.name) ? 'off' : 'on'}">
<span class="small">${overridesOn.get(e.name) ? 'Personal overrides allowed' : 'No personal overrides'}</span>
<button type="submit" class="secondary">${overridesOn.get(e.name) ? 'Stop allowing personal overrides' : 'Allow personal overrides'}</button>
</form>`
            }`
          : html`${e.ownersOnly ? 'owners only' : 'shared'}; ${secondPersonRequired(vault, e) ? 'a second person decides pushes' : 'the sender may decide'}${
              overridesOn.get(e.name) ? '; personal overrides allowed' : ''
            }`
      }</td>
</tr>`,
    )
    const body = html`${o.problem ? refusalBox(o.problem) : ''}${o.done && DONE[o.done] ? html`<p class="notice" role="status">${DONE[o.done]}</p>` : ''}
${await vaultHeader(deps, vault, 'settings', { ownHeading: true })}
<h1>Settings of ${vault.name}</h1>
${owner ? '' : html`<p class="hint">Your role (${vault.role}) cannot change settings; only owners can.</p>`}
${
  owner
    ? html`<section class="card">
<h2>Rename</h2>
<form method="post" action="${base}/rename">
${csrfField(token)}
<label for="vault-name">Name</label>
<input id="vault-name" name="name" value="${vault.name}" maxlength="100" required>
<button type="submit">Rename</button>
</form>
</section>`
    : ''
}
<section class="card">
<h2>Environments</h2>
<p class="hint">Owners only: editors neither read nor change it. Require a second person: the sender of a push cannot decide it there (on by default for owners-only environments). Allow personal overrides: each member may use their own value of a variable for their own reads (never anyone else's, never CI's); not available on owners-only environments, and turning it off deletes them.</p>
<table class="stack envs"><thead><tr><th>Environment</th><th>Rules</th></tr></thead><tbody>${envRows}</tbody></table>
</section>
${
  owner
    ? html`<section class="card" id="webhooks">
<h2>Webhooks</h2>
<p>Tell another service (Slack, a chat bot, your own endpoint) when a push is sent, decided or expires: names and who, never a value.</p>
<p><a class="button secondary" href="${`${vaultUrl(deps, vault.id)}/webhooks`}">Webhooks</a></p>
</section>`
    : ''
}
${
  owner
    ? html`<section class="card danger-zone">
<h2>Delete vault</h2>
<p>This removes the vault with all its variables, pushes, history and access log, for every member. It cannot be undone. One line stays in the server's audit log: who deleted which vault, when.</p>
<form method="post" action="${base}/delete">
${csrfField(token)}
<label for="confirm-name">Type the vault's name, <strong>${vault.name}</strong>, to confirm</label>
<input id="confirm-name" name="confirm" autocomplete="off" required>
<button type="submit" class="danger">Delete vault</button>
</form>
</section>`
    : ''
}`
    return sendPage(deps, reply, { status: o.problem?.status ?? 200, title: `Settings of ${vault.name}`, body, person })
  }

  app.get<{ Params: { vault: string } }>('/v/:vault/settings', async function settingsPage(request, reply) {
    const person = await personOrSignIn(deps, request, reply)
    if (!person) return reply
    request.envkeepOperation = `showing the settings of vault ${vaultTag(request.params.vault)}`
    const vault = await domain.locateVault(pageActor(person, request), request.params.vault)
    const done = (request.query as Record<string, unknown>)?.done
    return render(reply, person, vault, { done: typeof done === 'string' ? done : undefined })
  })

  function form(path: string, operation: string, work: (request: FastifyRequest<{ Params: { vault: string } }>, person: Person) => Promise<string>): void {
    app.post<{ Params: { vault: string } }>(`/v/:vault/settings${path}`, { preHandler: app.csrfProtection }, async function settingsForm(request, reply) {
      const person = await personOrSignIn(deps, request, reply, pagePath(deps, settingsPath(request.params.vault)))
      if (!person) return reply
      request.envkeepOperation = `${operation} of vault ${vaultTag(request.params.vault)}`
      try {
        return seeOther(deps, reply, await work(request, person))
      } catch (err) {
        const f = toPageFailure(err, request)
        const vault = f.status < 500 ? await domain.locateVault(pageActor(person, request), request.params.vault).catch(() => null) : null
        if (!vault) return sendErrorPage(reply, { ...f, ...(await topBar(deps, reply, person)) })
        return render(reply, person, vault, { problem: f })
      }
    })
  }

  form('/rename', 'renaming', async (request, person) => {
    const v = await domain.renameVault(pageActor(person, request), { vaultId: request.params.vault, name: field(request.body, 'name') })
    return `${settingsPath(v.id)}?done=renamed`
  })
  form('/environment', 'changing an environment', async (request, person) => {
    await domain.setEnvironmentRules(pageActor(person, request), {
      vaultId: request.params.vault,
      environment: field(request.body, 'environment'),
      ownersOnly: field(request.body, 'owners_only') === 'on',
      secondPerson: field(request.body, 'second_person') === 'on',
    })
    return `${settingsPath(request.params.vault)}?done=environment`
  })
  form('/overrides', 'changing personal overrides', async (request, person) => {
    await domain.allowOverrides(pageActor(person, request), {
      vaultId: request.params.vault,
      environment: field(request.body, 'environment'),
      allow: field(request.body, 'allow') === 'on',
    })
    return `${settingsPath(request.params.vault)}?done=environment`
  })
  form('/delete', 'deleting', async (request, person) => {
    await domain.deleteVault(pageActor(person, request), { vaultId: request.params.vault, confirmName: field(request.body, 'confirm') })
    return '/?done=vault_deleted'
  })
}

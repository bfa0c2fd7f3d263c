import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Person } from '../adapters/people.js'
import type { AccessAction, EnvironmentInfo, VariableMeta, VaultAccess } from '../adapters/vault-store.js'
import { ADMINISTRATOR_CLIENT, type PersonActor } from '../domain/actor.js'
import { canManageVault, canReadEnvironment, canWriteEnvironment } from '../domain/permissions.js'
import { ENVIRONMENT_NAME_RE, MAX_NAME_LENGTH, ROLES } from '../domain/rules.js'
import { vaultTag } from '../errors.js'
import { csrfField, field, pagePath, personCache, personLabel, personOrSignIn, seeOther, sendPage, when, type PageDeps } from './context.js'
import { pageActor, pageDomain } from './domain.js'
import { refusalBox, sendErrorPage, toPageFailure, type PageFailure } from './error.js'
import { historyPath } from './history.js'
import { settingsPath } from './settings.js'
import { html, type SafeHtml } from './html.js'
import { membersSection, type InvitationShown } from './members.js'

export { ENVIRONMENT_NAME_RE, ROLES }
export const ACCESS_ACTIONS: readonly AccessAction[] = Object.freeze([
  'read',
  'refused',
  'push_created',
  'push_applied',
  'push_rejected',
  'push_expired',
  'variable_set',
  'variable_deleted',
  'member_added',
  'member_changed',
  'member_removed',
  'environment_created',
  'vault_created',
])
const LOG_PAGE = 50

const NOTICES: Readonly<Record<string, string>> = Object.freeze({
  variable_added: 'The variable was added.',
  variable_changed: 'The variable was changed.',
  variable_deleted: 'The variable was deleted.',
  member_added: 'The member was added.',
  member_changed: 'The role was changed.',
  member_removed: 'The member was removed.',
  invitation_revoked: 'The invitation was revoked.',
  environment_created: 'The environment was added.',
})

export function vaultUrl(deps: PageDeps, vaultId: string): string {
  return pagePath(deps, `/v/${encodeURIComponent(vaultId)}`)
}

interface VaultView {
  readonly vault: VaultAccess
  readonly person: Person
  readonly problem?: PageFailure | null
  readonly notice?: string | null
  /** values shown after "Reveal": environment → name → value */
  readonly revealed?: { readonly environment: string; readonly values: Readonly<Record<string, string>> } | null
  readonly query?: unknown
  /** an invitation just made: its link, shown once in Members */
  readonly invited?: InvitationShown | null
}

function logFilter(query: unknown, vault: VaultAccess): { environment?: string; action?: AccessAction; before?: number } {
  const env = field(query, 'environment')
  const action = field(query, 'action')
  const before = Number(field(query, 'before'))
  return {
    ...(vault.environments.some((e) => e.name === env) ? { environment: env } : {}),
    ...((ACCESS_ACTIONS as readonly string[]).includes(action) ? { action: action as AccessAction } : {}),
    ...(Number.isSafeInteger(before) && before > 0 ? { before } : {}),
  }
}

async function renderVault(deps: PageDeps, reply: FastifyReply, view: VaultView): Promise<FastifyReply> {
  const { vault, person } = view
  const { storage } = deps.opts
  const token = reply.generateCsrf()
  const csrf = csrfField(token)
  const base = vaultUrl(deps, vault.id)
  const owner = canManageVault(vault.role)
  const people = personCache(deps)
  const filter = logFilter(view.query, vault)

  const [variables, members, log, pending] = await Promise.all([
    Promise.all(vault.environments.map((e) => storage.listVariableNames(vault.id, e.name))),
    storage.listMembers(vault.id),
    storage.listAccessLog(vault.id, { ...filter, limit: LOG_PAGE }),
    storage.listImports(vault.id, { status: 'pending', limit: 50 }),
  ])
  // a push past its expiry is expired on its next read; do not offer it for review
  const now = deps.opts.now().getTime()
  const pushes = pending.filter((p) => p.expiresAt.getTime() > now)
  const memberPeople = await Promise.all(members.map((m) => people(m.personId)))
  const logPeople = await Promise.all(log.map((l) => people(l.personId)))
  const logSubjects = await Promise.all(log.map((l) => people(l.subject)))
  const pushPeople = await Promise.all(pushes.map((p) => people(p.senderId)))
  const domain = pageDomain(deps)
  // pending invitations: owners only, when the host keeps them (people.listInvitations)
  const invitations = owner ? await domain.listInvitations(pageActor(person, reply.request), vault.id) : null
  const inviters = await Promise.all((invitations ?? []).map((inv) => people(inv.invitedBy)))

  const envSections = vault.environments.map((env, i) =>
    environmentSection(deps, vault, env, variables[i] ?? [], csrf, view.revealed?.environment === env.name ? view.revealed.values : null),
  )

  const pushRows = pushes.map(
    (p, i) => html`<tr>
<td data-label="Environment">${p.environment}</td>
<td data-label="Sent by">${personLabel(pushPeople[i] ?? null, p.senderId)}</td>
<td data-label="Sent">${when(p.createdAt)}</td>
<td data-label="Expires">${when(p.expiresAt)}</td>
<td data-label="Names">${p.names.length}</td>
<td><a href="${`${base}/variables/imports/${encodeURIComponent(p.id)}`}">Review</a></td>
</tr>`,
  )

  const logRows = log.map(
    (l, i) => html`<tr>
<td data-label="When">${when(l.at)}</td>
<td data-label="Who">${
      l.personId
        ? html`${personLabel(logPeople[i] ?? null, l.personId)}${l.clientId ? html` <span class="muted">via command line</span>` : ''}`
        : l.clientId === ADMINISTRATOR_CLIENT
          ? html`<span class="muted">server administrator</span>`
          : html`<span class="muted">—</span>`
    }</td>
<td data-label="Action"><span class="action">${l.action.replace(/_/g, ' ')}</span></td>
<td data-label="Environment">${l.environment ?? ''}</td>
<td data-label="Names">${
      l.subject
        ? html`${personLabel(logSubjects[i] ?? null, l.subject)}${l.detail ? html` as <span class="role role-${l.detail}">${l.detail}</span>` : ''}`
        : l.names.length
          ? html`<code>${l.names.join(', ')}</code>`
          : ''
    }</td>
</tr>`,
  )
  const oldest = log.length === LOG_PAGE ? log[log.length - 1] : undefined
  const olderQuery = oldest
    ? new URLSearchParams({
        ...(filter.environment ? { environment: filter.environment } : {}),
        ...(filter.action ? { action: filter.action } : {}),
        before: String(oldest.id),
      }).toString()
    : ''

  const body = html`${view.problem ? refusalBox(view.problem) : ''}
${view.notice ? html`<p class="notice" role="status">${view.notice}</p>` : ''}
<p class="crumbs"><a href="${pagePath(deps, '/')}">Your vaults</a></p>
<h1>${vault.name}</h1>
<p>Your role: <span class="role role-${vault.role}">${vault.role}</span> · <a href="${pagePath(deps, settingsPath(vault.id))}">Settings</a>${owner ? html` · <a href="${base}/webhooks">Webhooks</a>` : ''}</p>
${vault.role === 'viewer' ? html`<p class="hint">As a viewer you see the names of variables, not their values.</p>` : ''}

<nav class="toc" aria-label="On this page"><a href="#environments">Environments</a> <a href="#pushes">Pending pushes</a> <a href="#members">Members</a> <a href="#access-log">Access log</a></nav>

<section id="environments">
<h2>Environments</h2>
${envSections}
${
  owner
    ? html`<section class="card">
<h3>Add an environment</h3>
<form method="post" action="${base}/environments">
${csrf}
<label for="env-name">Environment name</label>
<input id="env-name" name="name" required maxlength="63" pattern="[a-z0-9][a-z0-9\-]{0,62}" autocomplete="off" spellcheck="false">
<p class="hint">Lower-case letters, digits and dashes, e.g. staging.</p>
<label class="check"><input type="checkbox" name="owners_only" value="on"> Owners only</label>
<button type="submit">Add environment</button>
</form>
</section>`
    : ''
}
</section>

<section id="pushes">
<h2>Pending pushes</h2>
${
  pushes.length === 0
    ? html`<p class="muted">No pushes are waiting for review.</p>`
    : html`<table class="stack"><thead><tr><th>Environment</th><th>Sent by</th><th>Sent</th><th>Expires</th><th>Names</th><th></th></tr></thead><tbody>${pushRows}</tbody></table>`
}
</section>

<section id="members">
${membersSection({ base, vault, person, csrf, members, memberPeople, invitations, inviters, canInvite: domain.canInvite(), invited: view.invited ?? null })}
</section>

<section id="access-log">
<h2>Access log</h2>
<form method="get" action="${base}" class="filters">
<label for="log-env">Environment</label>
<select id="log-env" name="environment"><option value="">all</option>${vault.environments.map((e) => html`<option value="${e.name}"${filter.environment === e.name ? html` selected` : ''}>${e.name}</option>`)}</select>
<label for="log-action">Action</label>
<select id="log-action" name="action"><option value="">all</option>${ACCESS_ACTIONS.map((a) => html`<option value="${a}"${filter.action === a ? html` selected` : ''}>${a.replace(/_/g, ' ')}</option>`)}</select>
<button type="submit" class="secondary">Filter</button>
</form>
${
  log.length === 0
    ? html`<p class="muted">No entries.</p>`
    : html`<table class="stack log"><thead><tr><th>When</th><th>Who</th><th>Action</th><th>Environment</th><th>Names</th></tr></thead><tbody>${logRows}</tbody></table>`
}
${oldest ? html`<p><a href="${`${base}?${olderQuery}#access-log`}">Older entries</a></p>` : ''}
</section>`

  return sendPage(deps, reply, { status: view.problem?.status ?? 200, title: vault.name, body, person })
}

function environmentSection(
  deps: PageDeps,
  vault: VaultAccess,
  env: EnvironmentInfo,
  vars: readonly VariableMeta[],
  csrf: SafeHtml,
  revealed: Readonly<Record<string, string>> | null,
): SafeHtml {
  const base = vaultUrl(deps, vault.id)
  const readable = canReadEnvironment(vault.role, env)
  const writable = readable && canWriteEnvironment(vault.role, env)
  const anchor = `env-${env.name}`
  const items = vars.map((v) => {
    const value = revealed && Object.hasOwn(revealed, v.name) ? revealed[v.name] : undefined
    return html`<li class="var">
<div class="var-head"><code class="name">${v.name}</code> <span class="muted small">updated ${when(v.updatedAt)}</span></div>
${
  readable
    ? html`<div class="var-value">${
        value !== undefined
          ? html`<code class="value" data-name="${v.name}">${value}</code>`
          : html`<span class="hidden-value" aria-label="value hidden">••••••••</span>
<form method="post" action="${`${base}/reveal#${anchor}`}" class="inline">
${csrf}<input type="hidden" name="environment" value="${env.name}"><input type="hidden" name="name" value="${v.name}">
<button type="submit" class="secondary">Reveal</button>
</form>`
      }</div>`
    : ''
}
${
  writable
    ? html`<div class="var-actions">
<details><summary>Change</summary>
<form method="post" action="${`${base}/variables/change#${anchor}`}">
${csrf}<input type="hidden" name="environment" value="${env.name}"><input type="hidden" name="name" value="${v.name}">
<label for="${`change-${env.name}-${v.name}`}">New value</label>
<textarea id="${`change-${env.name}-${v.name}`}" name="value" rows="2" required spellcheck="false" autocomplete="off"></textarea>
<button type="submit">Save</button>
</form>
</details>
<form method="post" action="${`${base}/variables/delete#${anchor}`}" class="inline" data-confirm="Delete this variable?">
${csrf}<input type="hidden" name="environment" value="${env.name}"><input type="hidden" name="name" value="${v.name}">
<button type="submit" class="danger">Delete</button>
</form>
</div>`
    : ''
}
</li>`
  })
  return html`<section class="env card" id="${anchor}">
<h3>${env.name}${env.ownersOnly ? html` <span class="badge">owners only</span>` : ''}</h3>
${readable ? html`<p class="env-links"><a href="${pagePath(deps, historyPath(vault.id, env.name))}">History</a></p>` : ''}
${
  !readable
    ? html`<p class="hint">Your role (${vault.role}) cannot read the values of ${env.ownersOnly && vault.role === 'editor' ? 'owners-only environments' : 'this environment'}.</p>`
    : ''
}
${vars.length === 0 ? html`<p class="muted">No variables yet.</p>` : html`<ul class="vars">${items}</ul>`}
${
  readable && vars.length > 0
    ? html`<form method="post" action="${`${base}/reveal#${anchor}`}" class="inline">
${csrf}<input type="hidden" name="environment" value="${env.name}">
<button type="submit" class="secondary">Reveal all</button>
</form>`
    : ''
}
${
  writable
    ? html`<details class="add"><summary>Add a variable</summary>
<form method="post" action="${`${base}/variables/add#${anchor}`}">
${csrf}<input type="hidden" name="environment" value="${env.name}">
<label for="${`add-name-${env.name}`}">Name</label>
<input id="${`add-name-${env.name}`}" name="name" required maxlength="${MAX_NAME_LENGTH}" pattern="[A-Za-z_][A-Za-z0-9_]*" autocomplete="off" spellcheck="false">
<label for="${`add-value-${env.name}`}">Value</label>
<textarea id="${`add-value-${env.name}`}" name="value" rows="2" required spellcheck="false" autocomplete="off"></textarea>
<button type="submit">Add variable</button>
</form>
</details>`
    : ''
}
</section>`
}

type Params = { vault: string }

/** `/v/:vault` and its forms. Every rule is the domain layer's; here the form fields and the answers. */
export function vaultRoutes(app: FastifyInstance, deps: PageDeps): void {
  const domain = pageDomain(deps)

  app.get<{ Params: Params }>('/v/:vault', async function vaultPage(request, reply) {
    const person = await personOrSignIn(deps, request, reply)
    if (!person) return reply
    request.envkeepOperation = `showing vault ${vaultTag(request.params.vault)}`
    const vault = await domain.locateVault(pageActor(person, request), request.params.vault)
    const done = field(request.query, 'done')
    return renderVault(deps, reply, { vault, person, notice: NOTICES[done] ?? null, query: request.query })
  })

  interface FormContext {
    readonly request: FastifyRequest<{ Params: Params }>
    readonly reply: FastifyReply
    readonly person: Person
    readonly actor: PersonActor
    readonly vaultId: string
  }

  /**
   * Runs a form of the vault page: on success `work` answers (redirect or
   * page); a refusal re-renders the vault page, as it is now, with the
   * refusal on top; a server failure, or a vault the person cannot see,
   * shows the error page.
   */
  function vaultForm(path: string, operation: (vaultId: string, body: unknown) => string, work: (ctx: FormContext) => Promise<FastifyReply>): void {
    app.post<{ Params: Params }>(`/v/:vault${path}`, { preHandler: app.csrfProtection }, async function vaultFormHandler(request, reply) {
      const vaultPath = vaultUrl(deps, request.params.vault)
      const person = await personOrSignIn(deps, request, reply, vaultPath)
      if (!person) return reply
      request.envkeepOperation = operation(vaultTag(request.params.vault), request.body)
      const actor = pageActor(person, request)
      try {
        return await work({ request, reply, person, actor, vaultId: request.params.vault })
      } catch (err) {
        const f = toPageFailure(err, request)
        const fresh = f.status >= 500 ? null : await domain.locateVault(actor, request.params.vault).catch(() => null)
        if (!fresh) return sendErrorPage(reply, { ...f, personName: person.name, basePath: deps.opts.basePath })
        return renderVault(deps, reply, { vault: fresh, person, problem: f })
      }
    })
  }

  const envPhrase = (verb: string) => (tag: string, body: unknown) => {
    const env = field(body, 'environment')
    return ENVIRONMENT_NAME_RE.test(env) ? `${verb} ${env} of vault ${tag}` : `${verb} an environment of vault ${tag}`
  }
  const back = (vaultId: string, query: string) => `/v/${encodeURIComponent(vaultId)}?${query}`

  vaultForm('/reveal', envPhrase('revealing values in'), async ({ request, reply, person, actor, vaultId }) => {
    const r = await domain.revealValues(actor, { vaultId, environment: field(request.body, 'environment'), name: field(request.body, 'name') })
    return renderVault(deps, reply, { vault: r.vault, person, revealed: { environment: r.env.name, values: r.values } })
  })

  for (const mode of ['add', 'change'] as const) {
    vaultForm(
      `/variables/${mode}`,
      envPhrase(mode === 'add' ? 'adding a variable to' : 'changing a variable in'),
      async ({ request, reply, actor, vaultId }) => {
        const r = await domain.writeVariable(actor, {
          vaultId,
          environment: field(request.body, 'environment'),
          name: field(request.body, 'name'),
          // a textarea's newlines arrive as CRLF (HTML forms); store what the person typed, \n
          value: field(request.body, 'value').replace(/\r\n?/g, '\n'),
          mode,
        })
        return seeOther(deps, reply, back(r.vault.id, `done=${mode === 'add' ? 'variable_added' : 'variable_changed'}#env-${r.env.name}`))
      },
    )
  }

  vaultForm('/variables/delete', envPhrase('deleting a variable from'), async ({ request, reply, actor, vaultId }) => {
    const r = await domain.deleteVariable(actor, { vaultId, environment: field(request.body, 'environment'), name: field(request.body, 'name') })
    return seeOther(deps, reply, back(r.vault.id, `done=variable_deleted#env-${r.env.name}`))
  })

  vaultForm(
    '/members/add',
    (tag) => `adding a member to vault ${tag}`,
    async ({ request, reply, actor, vaultId }) => {
      const r = await domain.addMember(actor, { vaultId, email: field(request.body, 'email'), role: field(request.body, 'role'), mode: 'new' })
      return seeOther(deps, reply, back(r.vault.id, 'done=member_added#members'))
    },
  )

  vaultForm(
    '/members/invite',
    (tag) => `inviting someone to vault ${tag}`,
    async ({ request, reply, person, actor, vaultId }) => {
      const r = await domain.inviteMember(actor, { vaultId, email: field(request.body, 'email'), role: field(request.body, 'role'), invitedBy: person })
      if (r.kind === 'added') return seeOther(deps, reply, back(r.member.vault.id, 'done=member_added#members'))
      // the link is in this answer only (never in a URL or the log): no redirect
      const invited = { email: r.email, role: r.role, link: r.link, emailed: r.emailed }
      return renderVault(deps, reply, { vault: r.vault, person, invited })
    },
  )

  vaultForm(
    '/members/invitations/revoke',
    (tag) => `revoking an invitation to vault ${tag}`,
    async ({ request, reply, actor, vaultId }) => {
      const r = await domain.revokeInvitation(actor, { vaultId, invitationId: field(request.body, 'invitation') })
      return seeOther(deps, reply, back(r.vault.id, 'done=invitation_revoked#members'))
    },
  )

  vaultForm(
    '/members/change',
    (tag) => `changing a member's role in vault ${tag}`,
    async ({ request, reply, person, actor, vaultId }) => {
      const r = await domain.changeRole(actor, { vaultId, personId: field(request.body, 'person'), role: field(request.body, 'role') })
      // someone who stepped down from owner no longer sees the members' forms
      const self = r.personId === person.id && r.role !== 'owner'
      return seeOther(deps, reply, back(r.vault.id, self ? 'done=member_changed' : 'done=member_changed#members'))
    },
  )

  vaultForm(
    '/members/remove',
    (tag) => `removing a member from vault ${tag}`,
    async ({ request, reply, person, actor, vaultId }) => {
      const r = await domain.removeMember(actor, { vaultId, personId: field(request.body, 'person') })
      if (r.personId === person.id) return seeOther(deps, reply, '/')
      return seeOther(deps, reply, back(r.vault.id, 'done=member_removed#members'))
    },
  )

  vaultForm(
    '/environments',
    (tag) => `adding an environment to vault ${tag}`,
    async ({ request, reply, actor, vaultId }) => {
      const r = await domain.createEnvironment(actor, {
        vaultId,
        name: field(request.body, 'name'),
        ownersOnly: field(request.body, 'owners_only') === 'on',
      })
      return seeOther(deps, reply, back(r.vault.id, `done=environment_created#env-${r.environment.name}`))
    },
  )
}

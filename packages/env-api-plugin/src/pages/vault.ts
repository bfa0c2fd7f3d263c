import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Person } from '../adapters/people.js'
import type {
  AccessAction,
  AccessLogEntry,
  EnvironmentInfo,
  Role,
  VariableMeta,
  VaultAccess,
} from '../adapters/vault-store.js'
import { canManageVault, canReadEnvironment, canWriteEnvironment } from '../access.js'
import { vaultTag } from '../errors.js'
import { nameProblem, valueProblem, MAX_NAME_LENGTH } from '../vault-service.js'
import {
  csrfField,
  field,
  pagePath,
  personCache,
  personLabel,
  personOrSignIn,
  seeOther,
  sendPage,
  when,
  type PageDeps,
} from './context.js'
import { pageError, refusalBox, sendErrorPage, toPageFailure, type PageFailure } from './error.js'
import { html, type SafeHtml } from './html.js'

export const ROLES: readonly Role[] = Object.freeze(['owner', 'editor', 'viewer'])
export const ENVIRONMENT_NAME_RE = /^[a-z0-9][a-z0-9-]{0,62}$/
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
])
const LOG_PAGE = 50
const NOT_SHARED = "database (only what's shared with you is visible)" as const

const NOTICES: Readonly<Record<string, string>> = Object.freeze({
  variable_added: 'The variable was added.',
  variable_changed: 'The variable was changed.',
  variable_deleted: 'The variable was deleted.',
  member_added: 'The member was added.',
  member_changed: 'The role was changed.',
  member_removed: 'The member was removed.',
  environment_created: 'The environment was added.',
})

export const NOT_FOUND_VAULT = 'this vault does not exist or is not shared with you'

/** The vault as the person sees it, or a 404 (absent and not shared look the same). */
export async function loadVault(deps: PageDeps, vaultId: string, person: Person): Promise<VaultAccess> {
  const vault = await deps.opts.storage.getVault(vaultId, person.id)
  if (!vault) throw pageError(404, NOT_SHARED, NOT_FOUND_VAULT)
  return vault
}

export function vaultUrl(deps: PageDeps, vaultId: string): string {
  return pagePath(deps, `/v/${encodeURIComponent(vaultId)}`)
}

function environmentOf(vault: VaultAccess, name: string): EnvironmentInfo {
  const env = vault.environments.find((e) => e.name === name)
  if (!env) throw pageError(404, NOT_SHARED, 'this environment does not exist in the vault')
  return env
}

function logEntry(request: FastifyRequest, deps: PageDeps, vaultId: string, person: Person, action: AccessAction, environment: string | null, names: readonly string[]): AccessLogEntry {
  return {
    vaultId,
    at: deps.opts.now(),
    personId: person.id,
    signInId: null,
    clientId: null,
    action,
    environment,
    names,
    address: request.ip ?? null,
    subject: null,
    detail: null,
  }
}

const NO_LIMIT = Object.freeze({ maxVariables: Number.MAX_SAFE_INTEGER, maxBytes: Number.MAX_SAFE_INTEGER })

interface VaultView {
  readonly vault: VaultAccess
  readonly person: Person
  readonly problem?: PageFailure | null
  readonly notice?: string | null
  /** values shown after "Reveal": environment → name → value */
  readonly revealed?: { readonly environment: string; readonly values: Readonly<Record<string, string>> } | null
  readonly query?: unknown
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
  const pushPeople = await Promise.all(pushes.map((p) => people(p.senderId)))
  const owners = members.filter((m) => m.role === 'owner').length

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

  const memberRows = members.map((m, i) => {
    const p = memberPeople[i] ?? null
    const lastOwner = m.role === 'owner' && owners <= 1
    return html`<tr>
<td data-label="Member">${personLabel(p, m.personId)}${m.personId === person.id ? html` <span class="muted">(you)</span>` : ''}</td>
<td data-label="Role"><span class="role role-${m.role}">${m.role}</span></td>
${owner
  ? html`<td class="actions">
<form method="post" action="${base}/members/change" class="inline">
${csrf}<input type="hidden" name="person" value="${m.personId}">
<label class="vh" for="role-${m.personId}">Role</label>
<select id="role-${m.personId}" name="role"${lastOwner ? html` disabled` : ''}>${ROLES.map((r) => html`<option value="${r}"${r === m.role ? html` selected` : ''}>${r}</option>`)}</select>
<button type="submit" class="secondary"${lastOwner ? html` disabled` : ''}>Change role</button>
</form>
<form method="post" action="${base}/members/remove" class="inline" data-confirm="Remove this member from the vault?">
${csrf}<input type="hidden" name="person" value="${m.personId}">
<button type="submit" class="danger"${lastOwner ? html` disabled title="A vault keeps at least one owner"` : ''}>Remove</button>
</form>
</td>`
  : ''}
</tr>`
  })

  const logRows = log.map(
    (l, i) => html`<tr>
<td data-label="When">${when(l.at)}</td>
<td data-label="Who">${l.personId ? personLabel(logPeople[i] ?? null, l.personId) : html`<span class="muted">—</span>`}${l.clientId ? html` <span class="muted">via command line</span>` : ''}</td>
<td data-label="Action"><span class="action">${l.action.replace(/_/g, ' ')}</span></td>
<td data-label="Environment">${l.environment ?? ''}</td>
<td data-label="Names">${l.names.length ? html`<code>${l.names.join(', ')}</code>` : ''}</td>
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
<p>Your role: <span class="role role-${vault.role}">${vault.role}</span></p>
${vault.role === 'viewer' ? html`<p class="hint">As a viewer you see the names of variables, not their values.</p>` : ''}

<nav class="toc" aria-label="On this page"><a href="#environments">Environments</a> <a href="#pushes">Pending pushes</a> <a href="#members">Members</a> <a href="#access-log">Access log</a></nav>

<section id="environments">
<h2>Environments</h2>
${envSections}
${owner
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
  : ''}
</section>

<section id="pushes">
<h2>Pending pushes</h2>
${pushes.length === 0
  ? html`<p class="muted">No pushes are waiting for review.</p>`
  : html`<table class="stack"><thead><tr><th>Environment</th><th>Sent by</th><th>Sent</th><th>Expires</th><th>Names</th><th></th></tr></thead><tbody>${pushRows}</tbody></table>`}
</section>

<section id="members">
<h2>Members</h2>
<table class="stack"><thead><tr><th>Member</th><th>Role</th>${owner ? html`<th></th>` : ''}</tr></thead><tbody>${memberRows}</tbody></table>
${owner
  ? html`<section class="card">
<h3>Add a member</h3>
<form method="post" action="${base}/members/add">
${csrf}
<label for="member-email">Email</label>
<input id="member-email" name="email" type="email" required autocomplete="off">
<label for="member-role">Role</label>
<select id="member-role" name="role">${ROLES.map((r) => html`<option value="${r}"${r === 'editor' ? html` selected` : ''}>${r}</option>`)}</select>
<p class="hint">The person needs an account already.</p>
<button type="submit">Add member</button>
</form>
</section>`
  : ''}
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
${log.length === 0
  ? html`<p class="muted">No entries.</p>`
  : html`<table class="stack log"><thead><tr><th>When</th><th>Who</th><th>Action</th><th>Environment</th><th>Names</th></tr></thead><tbody>${logRows}</tbody></table>`}
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
    const value = revealed && Object.prototype.hasOwnProperty.call(revealed, v.name) ? revealed[v.name] : undefined
    return html`<li class="var">
<div class="var-head"><code class="name">${v.name}</code> <span class="muted small">updated ${when(v.updatedAt)}</span></div>
${readable
  ? html`<div class="var-value">${value !== undefined
      ? html`<code class="value" data-name="${v.name}">${value}</code>`
      : html`<span class="hidden-value" aria-label="value hidden">••••••••</span>
<form method="post" action="${`${base}/reveal#${anchor}`}" class="inline">
${csrf}<input type="hidden" name="environment" value="${env.name}"><input type="hidden" name="name" value="${v.name}">
<button type="submit" class="secondary">Reveal</button>
</form>`}</div>`
  : ''}
${writable
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
  : ''}
</li>`
  })
  return html`<section class="env card" id="${anchor}">
<h3>${env.name}${env.ownersOnly ? html` <span class="badge">owners only</span>` : ''}</h3>
${!readable
  ? html`<p class="hint">Your role (${vault.role}) cannot read the values of ${env.ownersOnly && vault.role === 'editor' ? 'owners-only environments' : 'this environment'}.</p>`
  : ''}
${vars.length === 0 ? html`<p class="muted">No variables yet.</p>` : html`<ul class="vars">${items}</ul>`}
${readable && vars.length > 0
  ? html`<form method="post" action="${`${base}/reveal#${anchor}`}" class="inline">
${csrf}<input type="hidden" name="environment" value="${env.name}">
<button type="submit" class="secondary">Reveal all</button>
</form>`
  : ''}
${writable
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
  : ''}
</section>`
}

type Params = { vault: string }

/** `/v/:vault` and its forms. */
export function vaultRoutes(app: FastifyInstance, deps: PageDeps): void {
  const { storage } = deps.opts

  app.get<{ Params: Params }>('/v/:vault', async function vaultPage(request, reply) {
    const person = await personOrSignIn(deps, request, reply)
    if (!person) return reply
    request.envkeepOperation = `showing vault ${vaultTag(request.params.vault)}`
    const vault = await loadVault(deps, request.params.vault, person)
    const done = field(request.query, 'done')
    return renderVault(deps, reply, { vault, person, notice: NOTICES[done] ?? null, query: request.query })
  })

  /**
   * Runs a form of the vault page: on success `work` answers (redirect or
   * page); a refusal re-renders the vault page with the refusal on top;
   * a server failure shows the error page.
   */
  function vaultForm(
    path: string,
    operation: (vaultId: string, body: unknown) => string,
    work: (ctx: { request: FastifyRequest<{ Params: Params }>; reply: FastifyReply; person: Person; vault: VaultAccess }) => Promise<FastifyReply>,
  ): void {
    app.post<{ Params: Params }>(`/v/:vault${path}`, { preHandler: app.csrfProtection }, async function vaultFormHandler(request, reply) {
      const vaultPath = vaultUrl(deps, request.params.vault)
      const person = await personOrSignIn(deps, request, reply, vaultPath)
      if (!person) return reply
      request.envkeepOperation = operation(vaultTag(request.params.vault), request.body)
      let vault: VaultAccess | null = null
      try {
        vault = await loadVault(deps, request.params.vault, person)
        return await work({ request, reply, person, vault })
      } catch (err) {
        const f = toPageFailure(err, request)
        if (!vault || f.status >= 500) return sendErrorPage(reply, { ...f, personName: person.name, basePath: deps.opts.basePath })
        // re-read: the refusal may follow a partial change by someone else
        const fresh = await storage.getVault(vault.id, person.id)
        if (!fresh) return sendErrorPage(reply, { ...f, personName: person.name, basePath: deps.opts.basePath })
        return renderVault(deps, reply, { vault: fresh, person, problem: f })
      }
    })
  }

  const envPhrase = (verb: string) => (tag: string, body: unknown) => {
    const env = field(body, 'environment')
    return ENVIRONMENT_NAME_RE.test(env) ? `${verb} ${env} of vault ${tag}` : `${verb} an environment of vault ${tag}`
  }

  function requireWrite(vault: VaultAccess, env: EnvironmentInfo): void {
    if (!canWriteEnvironment(vault.role, env)) {
      throw pageError(
        403,
        'database (your role)',
        vault.role === 'viewer'
          ? 'your role (viewer) cannot change variables'
          : `your role (${vault.role}) cannot change owners-only environments`,
      )
    }
  }

  function requireOwner(vault: VaultAccess, what: string): void {
    if (!canManageVault(vault.role)) throw pageError(403, 'database (your role)', `your role (${vault.role}) cannot ${what}; only owners can`)
  }

  vaultForm('/reveal', envPhrase('revealing values in'), async ({ request, reply, person, vault }) => {
    const env = environmentOf(vault, field(request.body, 'environment'))
    if (!canReadEnvironment(vault.role, env)) {
      await storage.appendAccessLog(logEntry(request, deps, vault.id, person, 'refused', env.name, []))
      throw pageError(
        403,
        'database (your role)',
        vault.role === 'viewer' ? 'your role (viewer) cannot read values' : `your role (${vault.role}) cannot read owners-only environments`,
      )
    }
    const name = field(request.body, 'name')
    let values: Record<string, string>
    if (name === '') {
      // storage writes the entry with the names it actually read
      const read = await storage.readVariables(vault.id, env.name, logEntry(request, deps, vault.id, person, 'read', env.name, []))
      values = await deps.crypto.openValues(vault.id, env.name, read.variables)
    } else {
      const sealed = await storage.getVariable(vault.id, env.name, name)
      if (!sealed) throw pageError(404, NOT_SHARED, 'that variable does not exist in this environment')
      // logged before the value leaves the server; if the log fails, nothing is shown
      await storage.appendAccessLog(logEntry(request, deps, vault.id, person, 'read', env.name, [name]))
      values = await deps.crypto.openValues(vault.id, env.name, [sealed])
    }
    return renderVault(deps, reply, { vault, person, revealed: { environment: env.name, values } })
  })

  async function writeVariable(
    ctx: { request: FastifyRequest<{ Params: Params }>; reply: FastifyReply; person: Person; vault: VaultAccess },
    mode: 'add' | 'change',
  ): Promise<FastifyReply> {
    const { request, reply, person, vault } = ctx
    const env = environmentOf(vault, field(request.body, 'environment'))
    requireWrite(vault, env)
    const name = field(request.body, 'name').trim()
    const value = field(request.body, 'value')
    const np = nameProblem(name)
    if (np) throw pageError(400, 'web app', np)
    const vp = valueProblem(value)
    if (vp) throw pageError(400, 'web app', vp)
    const existing = await storage.getVariable(vault.id, env.name, name)
    if (mode === 'add' && existing) throw pageError(409, 'web app', 'a variable with that name exists in this environment; use Change to give it a new value')
    if (mode === 'change' && !existing) throw pageError(404, NOT_SHARED, 'that variable does not exist in this environment')
    const [sealed] = await deps.crypto.sealValues(vault.id, env.name, { [name]: value })
    await storage.setVariable({ vaultId: vault.id, environment: env.name, value: sealed!, by: person.id, now: deps.opts.now(), limit: NO_LIMIT }, logEntry(request, deps, vault.id, person, 'variable_set', env.name, [name]))
    return seeOther(deps, reply, `/v/${encodeURIComponent(vault.id)}?done=${mode === 'add' ? 'variable_added' : 'variable_changed'}#env-${env.name}`)
  }

  vaultForm('/variables/add', envPhrase('adding a variable to'), (ctx) => writeVariable(ctx, 'add'))
  vaultForm('/variables/change', envPhrase('changing a variable in'), (ctx) => writeVariable(ctx, 'change'))

  vaultForm('/variables/delete', envPhrase('deleting a variable from'), async ({ request, reply, person, vault }) => {
    const env = environmentOf(vault, field(request.body, 'environment'))
    requireWrite(vault, env)
    const name = field(request.body, 'name')
    if (nameProblem(name)) throw pageError(404, NOT_SHARED, 'that variable does not exist in this environment')
    const deleted = await storage.deleteVariable({ vaultId: vault.id, environment: env.name, name, by: person.id, now: deps.opts.now() }, logEntry(request, deps, vault.id, person, 'variable_deleted', env.name, [name]))
    if (!deleted.ok) throw pageError(404, NOT_SHARED, 'that variable does not exist in this environment')
    return seeOther(deps, reply, `/v/${encodeURIComponent(vault.id)}?done=variable_deleted#env-${env.name}`)
  })

  function roleOf(body: unknown): Role {
    const role = field(body, 'role')
    if (!(ROLES as readonly string[]).includes(role)) throw pageError(400, 'web app', 'a role must be owner, editor or viewer')
    return role as Role
  }

  vaultForm('/members/add', (tag) => `adding a member to vault ${tag}`, async ({ request, reply, person, vault }) => {
    requireOwner(vault, 'add members')
    const role = roleOf(request.body)
    const email = field(request.body, 'email').trim()
    if (email.length === 0 || email.length > 320) throw pageError(400, 'web app', 'an email address is needed')
    const who = await deps.opts.people.findPersonByEmail(email)
    if (!who) throw pageError(404, 'web app', 'there is no account with that email address; the person needs an account first')
    const members = await storage.listMembers(vault.id)
    if (members.some((m) => m.personId === who.id)) throw pageError(409, 'web app', 'that person is already a member; change their role instead')
    await storage.setMember({ vaultId: vault.id, personId: who.id, role }, { ...logEntry(request, deps, vault.id, person, 'member_added', null, []), subject: who.id, detail: role })
    return seeOther(deps, reply, `/v/${encodeURIComponent(vault.id)}?done=member_added#members`)
  })

  async function memberOf(vault: VaultAccess, body: unknown): Promise<{ personId: string; role: Role; owners: number }> {
    const personId = field(body, 'person')
    const members = await storage.listMembers(vault.id)
    const m = members.find((x) => x.personId === personId)
    if (!m) throw pageError(404, NOT_SHARED, 'that person is not a member of this vault')
    return { ...m, owners: members.filter((x) => x.role === 'owner').length }
  }

  vaultForm('/members/change', (tag) => `changing a member's role in vault ${tag}`, async ({ request, reply, person, vault }) => {
    requireOwner(vault, 'change roles')
    const role = roleOf(request.body)
    const m = await memberOf(vault, request.body)
    if (m.role === 'owner' && role !== 'owner' && m.owners <= 1) throw pageError(409, 'web app', 'a vault must keep at least one owner; make someone else owner first')
    if (m.role !== role) {
      await storage.setMember({ vaultId: vault.id, personId: m.personId, role }, { ...logEntry(request, deps, vault.id, person, 'member_changed', null, []), subject: m.personId, detail: role })
    }
    if (m.personId === person.id && role !== 'owner') return seeOther(deps, reply, `/v/${encodeURIComponent(vault.id)}?done=member_changed`)
    return seeOther(deps, reply, `/v/${encodeURIComponent(vault.id)}?done=member_changed#members`)
  })

  vaultForm('/members/remove', (tag) => `removing a member from vault ${tag}`, async ({ request, reply, person, vault }) => {
    requireOwner(vault, 'remove members')
    const m = await memberOf(vault, request.body)
    if (m.role === 'owner' && m.owners <= 1) throw pageError(409, 'web app', 'a vault must keep at least one owner; the last owner cannot be removed')
    await storage.removeMember({ vaultId: vault.id, personId: m.personId }, { ...logEntry(request, deps, vault.id, person, 'member_removed', null, []), subject: m.personId })
    if (m.personId === person.id) return seeOther(deps, reply, '/')
    return seeOther(deps, reply, `/v/${encodeURIComponent(vault.id)}?done=member_removed#members`)
  })

  vaultForm('/environments', (tag) => `adding an environment to vault ${tag}`, async ({ request, reply, person, vault }) => {
    requireOwner(vault, 'add environments')
    const name = field(request.body, 'name').trim()
    if (!ENVIRONMENT_NAME_RE.test(name)) {
      throw pageError(400, 'web app', 'an environment name must be 1 to 63 lower-case letters, digits or dashes, starting with a letter or digit')
    }
    if (vault.environments.some((e) => e.name === name)) throw pageError(409, 'web app', 'an environment with that name exists in this vault')
    const ownersOnly = field(request.body, 'owners_only') === 'on'
    await storage.createEnvironment({ vaultId: vault.id, name, ownersOnly, now: deps.opts.now() }, logEntry(request, deps, vault.id, person, 'environment_created', name, []))
    return seeOther(deps, reply, `/v/${encodeURIComponent(vault.id)}?done=environment_created#env-${name}`)
  })
}

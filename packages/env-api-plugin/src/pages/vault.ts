import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Person } from '../adapters/people.js'
import type { EnvironmentInfo, VariableMeta, VaultAccess } from '../adapters/vault-store.js'
import type { PersonActor } from '../domain/actor.js'
import type { ReferenceInfo } from '../domain/references.js'
import { overrideForms, overrideMarks, overridesShown, type OverridesShown } from './overrides.js'
import { canManageVault, mayAccess } from '../domain/permissions.js'
import { PENDING_SHOWN } from '../domain/pushes.js'
import { secondPersonRequired } from '../domain/vault-admin.js'
import { ENVIRONMENT_NAME_RE, MAX_NAME_LENGTH, NAME_RE, ROLES } from '../domain/rules.js'
import { vaultTag } from '../errors.js'
import { csrfField, field, pagePath, personCache, personOrSignIn, seeOther, sendPage, when, type PageDeps, topBar } from './context.js'
import { pageActor, pageDomain } from './domain.js'
import { refusalBox, sendErrorPage, toPageFailure, type PageFailure } from './error.js'
import { historyPath, tabPath, vaultHeader } from './vault-header.js'
import { html, type SafeHtml } from './html.js'
import { codeMark } from './code-mark.js'
import { membersSection, type InvitationShown } from './members.js'
import { accessLogTab, pushesTab } from './vault-tabs.js'
import { reviewPath } from '../review-path.js'

export { ENVIRONMENT_NAME_RE, ROLES }

/** The variable-name rule as an HTML `pattern` (anchored by the browser): the domain's NAME_RE without its anchors. */
const NAME_PATTERN = NAME_RE.source.replace(/^\^|\$$/g, '')
const NOTICES: Readonly<Record<string, string>> = Object.freeze({
  variable_added: 'The variable was added.',
  variable_changed: 'The variable was changed.',
  variable_deleted: 'The variable was deleted.',
  reference_set: 'The reference was saved.',
  override_set: 'Your override was saved: your own reads use it, nobody else’s.',
  override_removed: 'Your override was removed.',
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
  /** which of the vault's pages (the tab bar); default Variables */
  readonly tab?: VaultTab
  /** Variables: the environment shown (default: the first the person may read, else the first) */
  readonly env?: string | null
  /** Variables: after "Edit", the name whose change form opens pre-filled with its (revealed) value */
  readonly editing?: string | null
}

export type VaultTab = 'variables' | 'pushes' | 'members' | 'access-log'

export { tabPath }

async function renderVault(deps: PageDeps, reply: FastifyReply, view: VaultView): Promise<FastifyReply> {
  const { vault, person } = view
  const actor = pageActor(person, reply.request)
  const tab = view.tab ?? 'variables'
  const token = reply.generateCsrf()
  const csrf = csrfField(token)
  const base = vaultUrl(deps, vault.id)
  const owner = canManageVault(vault.role)
  const people = personCache(deps)

  // a push past its expiry is left out (listPushes): it is never offered for review
  const pushes = await deps.domain.listPushes(actor, { vaultId: vault.id, status: 'pending', limit: PENDING_SHOWN })
  const readableEnv = vault.environments.find((e) => mayAccess(vault, e, 'read'))
  const shownEnv = vault.environments.find((e) => e.name === view.env) ?? readableEnv ?? vault.environments[0]

  let section: SafeHtml
  if (tab === 'variables') section = await variablesTab(deps, actor, vault, view, csrf, shownEnv)
  else if (tab === 'pushes') section = await pushesTab(deps, actor, vault, pushes, people)
  else if (tab === 'members') {
    const { domain } = deps
    const members = await domain.listMembers(actor, vault.id)
    const memberPeople = await Promise.all(members.map((m) => people(m.personId)))
    // pending invitations: owners only, when the host keeps them (people.listInvitations)
    const invitations = owner ? await domain.listInvitations(actor, vault.id) : null
    const inviters = await Promise.all((invitations ?? []).map((inv) => people(inv.invitedBy)))
    // owners see who signs in with a password alone (when the host knows: people.withoutSecondFactor)
    const hook = deps.opts.people.withoutSecondFactor
    const noSecondFactor =
      owner && hook
        ? await hook.call(
            deps.opts.people,
            members.map((m) => m.personId),
          )
        : null
    section = html`<section id="members">
${membersSection({ base, vault, person, csrf, members, memberPeople, invitations, inviters, canInvite: domain.canInvite(), invited: view.invited ?? null, noSecondFactor })}
</section>`
  } else section = await accessLogTab(deps, actor, vault, view.query, people)

  const body = html`${view.problem ? refusalBox(view.problem) : ''}
${view.notice ? html`<p class="notice" role="status">${view.notice}</p>` : ''}
${await vaultHeader(deps, vault, tab, { env: shownEnv?.name ?? null, pending: pushes.length })}
${section}`

  return sendPage(deps, reply, { status: view.problem?.status ?? 200, title: vault.name, body, person })
}

/** Variables: one environment at a time (a switcher), a filter box, and, for owners, "Add an environment". */
async function variablesTab(
  deps: PageDeps,
  actor: PersonActor,
  vault: VaultAccess,
  view: VaultView,
  csrf: SafeHtml,
  env: EnvironmentInfo | undefined,
): Promise<SafeHtml> {
  const base = vaultUrl(deps, vault.id)
  const owner = canManageVault(vault.role)
  const q = field(view.query, 'q').trim().slice(0, MAX_NAME_LENGTH)
  const all = env ? await deps.domain.listVariables(actor, { vaultId: vault.id, environment: env.name }) : []
  const refs = env ? await deps.domain.listReferences(actor, { vaultId: vault.id, environment: env.name }) : new Map<string, ReferenceInfo>()
  const overrides = env ? await overridesShown(deps, actor, vault, env) : null
  const vars = q ? all.filter((v) => v.name.toLowerCase().includes(q.toLowerCase())) : all
  const switcher = html`<nav class="envs" aria-label="Environments">${vault.environments.map(
    (e) =>
      html`<a href="${`${base}?env=${encodeURIComponent(e.name)}`}"${e.name === env?.name ? html` aria-current="true" class="current"` : ''}>${e.name}${e.ownersOnly ? html` <span class="badge">owners only</span>` : ''}</a>`,
  )}</nav>`
  const filter = env
    ? html`<form method="get" action="${base}" class="filters" role="search">
<input type="hidden" name="env" value="${env.name}">
<label for="var-filter">Find a variable</label>
<input id="var-filter" name="q" value="${q}" maxlength="${MAX_NAME_LENGTH}" autocomplete="off" spellcheck="false">
<button type="submit" class="secondary">Find</button>
${q ? html`<a href="${`${base}?env=${encodeURIComponent(env.name)}`}">Show all</a> <span class="muted">${vars.length} of ${all.length}</span>` : ''}
</form>`
    : ''
  const revealed = view.revealed && env && view.revealed.environment === env.name ? view.revealed.values : null
  const pasteable = env && mayAccess(vault, env, 'read')
  return html`<section id="environments">
<h2>Variables</h2>
${switcher}
${filter}
${pasteable ? html`<p><a href="${`${base}/paste?environment=${encodeURIComponent(env.name)}`}">Paste a .env</a> <span class="muted">(sent as a push, for review)</span></p>` : ''}
${env ? environmentSection(deps, vault, env, vars, refs, overrides, csrf, revealed, view.editing ?? null) : html`<p class="muted">This vault has no environment yet.</p>`}
${
  owner
    ? html`<details class="card add-env"><summary>Add an environment</summary>
<form method="post" action="${base}/environments">
${csrf}
<label for="env-name">Environment name</label>
<input id="env-name" name="name" required maxlength="63" pattern="[a-z0-9][a-z0-9\-]{0,62}" autocomplete="off" spellcheck="false">
<p class="hint">Lower-case letters, digits and dashes, e.g. staging.</p>
<label class="check"><input type="checkbox" name="owners_only" value="on"> Owners only</label>
<button type="submit">Add environment</button>
</form>
</details>`
    : ''
}
</section>`
}

function environmentSection(
  deps: PageDeps,
  vault: VaultAccess,
  env: EnvironmentInfo,
  vars: readonly VariableMeta[],
  refs: ReadonlyMap<string, ReferenceInfo>,
  overrides: OverridesShown | null,
  csrf: SafeHtml,
  revealed: Readonly<Record<string, string>> | null,
  editing: string | null,
): SafeHtml {
  const base = vaultUrl(deps, vault.id)
  const readable = mayAccess(vault, env, 'read')
  const writable = readable && mayAccess(vault, env, 'write')
  const anchor = `env-${env.name}`
  // "Require a second person": changes are proposed as pushes for someone else to apply (issue 25)
  const propose = writable && secondPersonRequired(vault, env)
  const items = vars.map((v) => {
    const value = revealed && Object.hasOwn(revealed, v.name) ? revealed[v.name] : undefined
    return html`<li class="var">
<div class="var-head"><code class="name">${v.name}</code>${codeMark(v.name)} <span class="muted small">updated ${when(v.updatedAt)}</span></div>
${referenceLine(refs.get(v.name))}
${overrides ? overrideMarks(overrides, v.name) : ''}
${
  readable
    ? html`<div class="var-value">${
        value !== undefined
          ? html`<code class="value" data-name="${v.name}">${value}</code>`
          : html`<span class="hidden-value" aria-label="value hidden">••••••••</span>
<form method="post" action="${`${base}/reveal#${anchor}`}" class="inline">
${csrf}<input type="hidden" name="environment" value="${env.name}"><input type="hidden" name="name" value="${v.name}">
<button type="submit" class="secondary">Reveal</button>
<button type="button" class="copy secondary" data-reveal-copy="${v.name}" aria-label="${`Copy the value of ${v.name}`}">Copy</button>
</form>`
      }</div>`
    : ''
}
${readable && overrides ? overrideForms(overrides, base, csrf, env, v.name) : ''}
${
  writable
    ? html`<div class="var-actions">
${
  editing === v.name && value !== undefined
    ? ''
    : html`<form method="post" action="${`${base}/reveal#${anchor}`}" class="inline">
${csrf}<input type="hidden" name="environment" value="${env.name}"><input type="hidden" name="name" value="${v.name}"><input type="hidden" name="edit" value="1">
<button type="submit" class="secondary">Edit</button>
</form>`
}
<details${editing === v.name ? html` open` : ''}><summary>${propose ? 'Propose a change' : 'Change'}</summary>
<form method="post" action="${`${base}/variables/change#${anchor}`}">
${csrf}<input type="hidden" name="environment" value="${env.name}"><input type="hidden" name="name" value="${v.name}">
<label for="${`change-${env.name}-${v.name}`}">New value</label>
<textarea id="${`change-${env.name}-${v.name}`}" name="value" rows="2" required spellcheck="false" autocomplete="off">${editing === v.name && value !== undefined ? value : ''}</textarea>
<button type="submit">${propose ? 'Propose' : 'Save'}</button>
</form>
</details>
<form method="post" action="${`${base}/variables/delete#${anchor}`}" class="inline" data-confirm="${propose ? 'Propose deleting this variable?' : 'Delete this variable?'}">
${csrf}<input type="hidden" name="environment" value="${env.name}"><input type="hidden" name="name" value="${v.name}">
<button type="submit" class="danger">${propose ? 'Propose deletion' : 'Delete'}</button>
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
${
  propose
    ? html`<p class="hint second-person">This environment requires a second person: a change you make here is proposed as a push, and someone else applies it.</p>`
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
    ? html`<details class="add"><summary>${propose ? 'Propose a variable' : 'Add a variable'}</summary>
<form method="post" action="${`${base}/variables/add#${anchor}`}">
${csrf}<input type="hidden" name="environment" value="${env.name}">
<label for="${`add-name-${env.name}`}">Name</label>
<input id="${`add-name-${env.name}`}" name="name" required maxlength="${MAX_NAME_LENGTH}" pattern="${NAME_PATTERN}" autocomplete="off" spellcheck="false">
<label for="${`add-value-${env.name}`}">Value</label>
<textarea id="${`add-value-${env.name}`}" name="value" rows="2" required spellcheck="false" autocomplete="off"></textarea>
<button type="submit">${propose ? 'Propose' : 'Add variable'}</button>
</form>
</details>
<details class="add"><summary>Refer to another variable</summary>
<form method="post" action="${`${base}/variables/refer#${anchor}`}">
${csrf}<input type="hidden" name="environment" value="${env.name}">
<label for="${`ref-name-${env.name}`}">Reference name</label>
<input id="${`ref-name-${env.name}`}" name="name" required maxlength="${MAX_NAME_LENGTH}" pattern="${NAME_PATTERN}" autocomplete="off" spellcheck="false">
<label for="${`ref-target-${env.name}`}">Refers to (environment.NAME)</label>
<input id="${`ref-target-${env.name}`}" name="target" required maxlength="320" placeholder="environment.NAME" autocomplete="off" spellcheck="false">
<p class="hint">Read with each reader's rights at every read: someone who may not read that environment is refused the whole read.</p>
<button type="submit">Add reference</button>
</form>
</details>`
    : ''
}
</section>`
}

/** "refers to production.X" under a reference's name; broken when its target is gone. */
function referenceLine(info: ReferenceInfo | undefined): SafeHtml | string {
  if (!info) return ''
  return info.broken
    ? html`<div class="ref broken" data-ref="${info.target}"><span class="badge">broken reference</span> to <code>${info.target}</code>, which no longer exists: reads of this environment fail until it is changed or deleted</div>`
    : html`<div class="ref" data-ref="${info.target}">refers to <code>${info.target}</code></div>`
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
    return renderVault(deps, reply, { vault, person, notice: NOTICES[done] ?? null, query: request.query, env: field(request.query, 'env') || null })
  })

  for (const tab of ['pushes', 'members', 'access-log'] as const) {
    app.get<{ Params: Params }>(`/v/:vault/${tab}`, async function vaultTabPage(request, reply) {
      const person = await personOrSignIn(deps, request, reply)
      if (!person) return reply
      request.envkeepOperation = `showing vault ${vaultTag(request.params.vault)}`
      const vault = await domain.locateVault(pageActor(person, request), request.params.vault)
      const done = field(request.query, 'done')
      return renderVault(deps, reply, { vault, person, notice: NOTICES[done] ?? null, query: request.query, tab })
    })
  }

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
  function vaultForm(
    path: string,
    operation: (vaultId: string, body: unknown) => string,
    work: (ctx: FormContext) => Promise<FastifyReply>,
    tab: VaultTab = 'variables',
  ): void {
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
        if (!fresh) return sendErrorPage(reply, { ...f, ...(await topBar(deps, reply, person)) })
        return renderVault(deps, reply, { vault: fresh, person, problem: f, tab, env: field(request.body, 'environment') || null })
      }
    })
  }

  const envPhrase = (verb: string) => (tag: string, body: unknown) => {
    const env = field(body, 'environment')
    return ENVIRONMENT_NAME_RE.test(env) ? `${verb} ${env} of vault ${tag}` : `${verb} an environment of vault ${tag}`
  }
  const back = (vaultId: string, query: string) => `/v/${encodeURIComponent(vaultId)}?${query}`
  const backTo = (vaultId: string, tab: VaultTab, query: string) => `${tabPath(vaultId, tab)}?${query}`

  vaultForm('/reveal', envPhrase('revealing values in'), async ({ request, reply, person, actor, vaultId }) => {
    const name = field(request.body, 'name')
    const r = await domain.revealValues(actor, { vaultId, environment: field(request.body, 'environment'), name })
    // "Edit" reveals (logged, as every reveal) and opens the change form with the value in it
    // never with the person's own override in it: saving would give everyone their value
    const editing = field(request.body, 'edit') === '1' && name && !r.overridden.includes(name) ? name : null
    return renderVault(deps, reply, { vault: r.vault, person, revealed: { environment: r.env.name, values: r.values }, env: r.env.name, editing })
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
        if (r.proposed) return seeOther(deps, reply, reviewPath(r.vault.id, r.proposed.id))
        return seeOther(
          deps,
          reply,
          back(r.vault.id, `env=${encodeURIComponent(r.env.name)}&done=${mode === 'add' ? 'variable_added' : 'variable_changed'}#env-${r.env.name}`),
        )
      },
    )
  }

  vaultForm('/variables/refer', envPhrase('adding a reference to'), async ({ request, reply, actor, vaultId }) => {
    const r = await domain.writeVariable(actor, {
      vaultId,
      environment: field(request.body, 'environment'),
      name: field(request.body, 'name'),
      ref: field(request.body, 'target'),
      mode: 'set',
    })
    return seeOther(deps, reply, back(r.vault.id, `env=${encodeURIComponent(r.env.name)}&done=reference_set#env-${r.env.name}`))
  })

  for (const remove of [false, true]) {
    vaultForm(
      remove ? '/variables/override/remove' : '/variables/override',
      envPhrase('overriding a variable for yourself in'),
      async ({ request, reply, actor, vaultId }) => {
        const r = await domain.setOverride(actor, {
          vaultId,
          environment: field(request.body, 'environment'),
          name: field(request.body, 'name'),
          value: remove ? null : field(request.body, 'value').replace(/\r\n?/g, '\n'),
        })
        return seeOther(
          deps,
          reply,
          back(r.vault.id, `env=${encodeURIComponent(r.env.name)}&done=${remove ? 'override_removed' : 'override_set'}#env-${r.env.name}`),
        )
      },
    )
  }

  vaultForm('/variables/delete', envPhrase('deleting a variable from'), async ({ request, reply, actor, vaultId }) => {
    const r = await domain.deleteVariable(actor, { vaultId, environment: field(request.body, 'environment'), name: field(request.body, 'name') })
    if (r.proposed) return seeOther(deps, reply, reviewPath(r.vault.id, r.proposed.id))
    return seeOther(deps, reply, back(r.vault.id, `env=${encodeURIComponent(r.env.name)}&done=variable_deleted#env-${r.env.name}`))
  })

  async function invite({ request, reply, person, actor, vaultId }: FormContext): Promise<FastifyReply> {
    const r = await domain.inviteMember(actor, { vaultId, email: field(request.body, 'email'), role: field(request.body, 'role'), invitedBy: person })
    if (r.kind === 'added') return seeOther(deps, reply, backTo(r.member.vault.id, 'members', 'done=member_added'))
    // the link is in this answer only (never in a URL or the log): no redirect
    const invited = { email: r.email, role: r.role, link: r.link, emailed: r.emailed }
    return renderVault(deps, reply, { vault: r.vault, person, invited, tab: 'members' })
  }

  vaultForm(
    '/members/add',
    (tag) => `adding a member to vault ${tag}`,
    // a host that invites people with accounts too adds nobody at once (nor says who has an account)
    deps.opts.people.invitesAccounts === true
      ? invite
      : async ({ request, reply, actor, vaultId }) => {
          const r = await domain.addMember(actor, { vaultId, email: field(request.body, 'email'), role: field(request.body, 'role'), mode: 'new' })
          return seeOther(deps, reply, backTo(r.vault.id, 'members', 'done=member_added'))
        },
    'members',
  )

  vaultForm('/members/invite', (tag) => `inviting someone to vault ${tag}`, invite, 'members')

  vaultForm(
    '/members/invitations/revoke',
    (tag) => `revoking an invitation to vault ${tag}`,
    async ({ request, reply, actor, vaultId }) => {
      const r = await domain.revokeInvitation(actor, { vaultId, invitationId: field(request.body, 'invitation') })
      return seeOther(deps, reply, backTo(r.vault.id, 'members', 'done=invitation_revoked'))
    },
    'members',
  )

  vaultForm(
    '/members/change',
    (tag) => `changing a member's role in vault ${tag}`,
    async ({ request, reply, actor, vaultId }) => {
      const r = await domain.changeRole(actor, { vaultId, personId: field(request.body, 'person'), role: field(request.body, 'role') })
      return seeOther(deps, reply, backTo(r.vault.id, 'members', 'done=member_changed'))
    },
    'members',
  )

  vaultForm(
    '/members/remove',
    (tag) => `removing a member from vault ${tag}`,
    async ({ request, reply, person, actor, vaultId }) => {
      const r = await domain.removeMember(actor, { vaultId, personId: field(request.body, 'person') })
      if (r.personId === person.id) return seeOther(deps, reply, '/')
      return seeOther(deps, reply, backTo(r.vault.id, 'members', 'done=member_removed'))
    },
    'members',
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
      return seeOther(deps, reply, back(r.vault.id, `env=${encodeURIComponent(r.environment.name)}&done=environment_created#env-${r.environment.name}`))
    },
  )
}

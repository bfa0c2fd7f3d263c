import type { AccessAction, AccessLogRow, ImportRecord, VaultAccess } from '../adapters/storage.js'
import { ACCESS_ACTIONS, isAccessAction } from '../domain/access-log-actions.js'
import { ADMINISTRATOR_CLIENT, type PersonActor } from '../domain/actor.js'
import { isCiPrincipal } from '../domain/ci-identities.js'
import { field, pagePath, personLabel, when, type PageDeps, type personCache } from './context.js'
import { html, type SafeHtml } from './html.js'

/** An entry made through the MCP endpoint: its detail names the client and the tool ("MCP <client>: <tool> (names only)"). */
function viaMcp(detail: string | null): boolean {
  return detail?.startsWith('MCP ') === true
}

/** The Pushes and Access log pages of a vault (vault.ts renders the header and the tab bar). */

function vaultBase(deps: PageDeps, vaultId: string): string {
  return pagePath(deps, `/v/${encodeURIComponent(vaultId)}`)
}

export const LOG_PAGE = 50

function logFilter(query: unknown, vault: VaultAccess): { environment?: string; action?: AccessAction; before?: number } {
  const env = field(query, 'environment')
  const action = field(query, 'action')
  const before = Number(field(query, 'before'))
  return {
    ...(vault.environments.some((e) => e.name === env) ? { environment: env } : {}),
    ...(isAccessAction(action) ? { action } : {}),
    ...(Number.isSafeInteger(before) && before > 0 ? { before } : {}),
  }
}

/** Pushes: the pending ones first (the only ones kept with their values), each with its review link. */
export async function pushesTab(
  deps: PageDeps,
  actor: PersonActor,
  vault: VaultAccess,
  pending: readonly ImportRecord[],
  people: ReturnType<typeof personCache>,
): Promise<SafeHtml> {
  const base = vaultBase(deps, vault.id)
  const decided = (await deps.domain.listPushes(actor, { vaultId: vault.id, limit: 30 })).filter((p) => p.status !== 'pending')
  const row = async (p: ImportRecord) => html`<tr>
<td data-label="Environment">${p.environment}</td>
<td data-label="Sent by">${personLabel(await people(p.senderId), p.senderId)}</td>
<td data-label="Sent">${when(p.createdAt)}</td>
<td data-label="Status"><span class="status status-${p.status}">${p.status}</span></td>
<td data-label="Names">${p.names.length}</td>
<td><a href="${`${base}/variables/imports/${encodeURIComponent(p.id)}`}">${p.status === 'pending' ? 'Review' : 'Open'}</a></td>
</tr>`
  const head = html`<thead><tr><th>Environment</th><th>Sent by</th><th>Sent</th><th>Status</th><th>Names</th><th></th></tr></thead>`
  return html`<section id="pushes">
<h2>Pending pushes</h2>
${
  pending.length === 0
    ? html`<p class="muted">No pushes are waiting for review.</p>`
    : html`<table class="stack pending">${head}<tbody>${await Promise.all(pending.map(row))}</tbody></table>`
}
<h2>Decided lately</h2>
${decided.length === 0 ? html`<p class="muted">None yet.</p>` : html`<table class="stack decided">${head}<tbody>${await Promise.all(decided.map(row))}</tbody></table>`}
</section>`
}

/** Access log: 50 a page, filtered by environment, action and person. */
export async function accessLogTab(
  deps: PageDeps,
  actor: PersonActor,
  vault: VaultAccess,
  query: unknown,
  people: ReturnType<typeof personCache>,
): Promise<SafeHtml> {
  const base = `${vaultBase(deps, vault.id)}/access-log`
  const filter = logFilter(query, vault)
  const personFilter = field(query, 'person')
  const members = await deps.domain.listMembers(actor, vault.id)
  const memberPeople = await Promise.all(members.map((m) => people(m.personId)))
  const who = members.some((m) => m.personId === personFilter) ? personFilter : ''
  // the domain reads further back for a person filter, and shows an invitation's email to owners only
  const log: AccessLogRow[] = await deps.domain.listAccessLog(actor, { vaultId: vault.id, ...filter, ...(who ? { personId: who } : {}), limit: LOG_PAGE })
  const logPeople = await Promise.all(log.map((l) => people(l.personId)))
  const logSubjects = await Promise.all(log.map((l) => people(l.subject)))
  const logRows = log.map(
    (l, i) => html`<tr>
<td data-label="When">${when(l.at)}</td>
<td data-label="Who">${
      l.personId && isCiPrincipal(l.personId)
        ? html`<span class="muted">CI identity</span>`
        : l.personId
          ? html`${personLabel(logPeople[i] ?? null, l.personId)}${l.clientId ? html` <span class="muted">via ${viaMcp(l.detail) ? 'an AI assistant (MCP)' : 'command line'}</span>` : ''}`
          : l.clientId === ADMINISTRATOR_CLIENT
            ? html`<span class="muted">server administrator</span>`
            : l.clientId?.startsWith('group-rule:')
              ? html`<span class="muted">group rule ${l.clientId.slice('group-rule:'.length)}</span>`
              : html`<span class="muted">—</span>`
    }</td>
<td data-label="Action"><span class="action">${l.action.replace(/_/g, ' ')}</span></td>
<td data-label="Environment">${l.environment ?? ''}</td>
<td data-label="Names">${
      l.subject
        ? html`${personLabel(logSubjects[i] ?? null, l.subject)}${l.detail ? html` as <span class="role role-${l.detail}">${l.detail}</span>` : ''}`
        : l.names.length
          ? // a CI read's detail (identity, JWT sub, run) is shown beside the names it read
            html`<code>${l.names.join(', ')}</code>${l.detail ? html` <span class="muted">${l.detail}</span>` : ''}`
          : l.detail
            ? html`<span class="muted">${l.detail}</span>`
            : ''
    }</td>
</tr>`,
  )
  const oldest = log.length === LOG_PAGE ? log[log.length - 1] : undefined
  const olderQuery = oldest
    ? new URLSearchParams({
        ...(filter.environment ? { environment: filter.environment } : {}),
        ...(filter.action ? { action: filter.action } : {}),
        ...(who ? { person: who } : {}),
        before: String(oldest.id),
      }).toString()
    : ''
  return html`<section id="access-log">
<h2>Access log</h2>
<form method="get" action="${base}" class="filters">
<label for="log-env">Environment</label>
<select id="log-env" name="environment"><option value="">all</option>${vault.environments.map((e) => html`<option value="${e.name}"${filter.environment === e.name ? html` selected` : ''}>${e.name}</option>`)}</select>
<label for="log-action">Action</label>
<select id="log-action" name="action"><option value="">all</option>${ACCESS_ACTIONS.map((a) => html`<option value="${a}"${filter.action === a ? html` selected` : ''}>${a.replace(/_/g, ' ')}</option>`)}</select>
<label for="log-person">Person</label>
<select id="log-person" name="person"><option value="">anyone</option>${members.map((m, i) => html`<option value="${m.personId}"${who === m.personId ? html` selected` : ''}>${memberPeople[i]?.name ?? 'unknown person'}</option>`)}</select>
<button type="submit" class="secondary">Filter</button>
</form>
${
  log.length === 0
    ? html`<p class="muted">No entries.</p>`
    : html`<table class="stack log"><thead><tr><th>When</th><th>Who</th><th>Action</th><th>Environment</th><th>Names</th></tr></thead><tbody>${logRows}</tbody></table>`
}
${oldest ? html`<p><a href="${`${base}?${olderQuery}`}">Older entries</a></p>` : ''}
</section>`
}

import type { EnvironmentInfo, VaultAccess } from '../adapters/vault-store.js'
import { mayAccess } from '../domain/permissions.js'
import { pagePath, type PageDeps } from './context.js'
import { html, type SafeHtml } from './html.js'

/**
 * The head of every page of a vault (issue 25: History and Settings had lost it): the way
 * back to the vault list, the vault's name, the person's role and the tab bar. Variables,
 * Pushes, Members and Access log live in vault.ts; History, Settings (with Webhooks) have
 * their own files; all of them start with this.
 */

export type VaultTabId = 'variables' | 'pushes' | 'history' | 'members' | 'access-log' | 'settings'

export function historyPath(vaultId: string, environment: string): string {
  return `/v/${encodeURIComponent(vaultId)}/history/${encodeURIComponent(environment)}`
}

export function settingsPath(vaultId: string): string {
  return `/v/${encodeURIComponent(vaultId)}/settings`
}

/** The vault's pages, as the tab bar links them. */
export function tabPath(vaultId: string, tab: Exclude<VaultTabId, 'history' | 'settings'>): string {
  const base = `/v/${encodeURIComponent(vaultId)}`
  return tab === 'variables' ? base : `${base}/${tab}`
}

export async function vaultHeader(
  deps: PageDeps,
  vault: VaultAccess,
  current: VaultTabId,
  o: {
    /** the environment in view: History opens on it when the person may read it */
    readonly env?: string | null
    /** pending pushes not past their end, when the caller has counted them */
    readonly pending?: number
    /** the page has its own h1 ("History of production"): the vault's name goes in the crumbs */
    readonly ownHeading?: boolean
  } = {},
): Promise<SafeHtml> {
  const pending = o.pending ?? (await deps.domain.pendingPushes(vault))
  const readable = vault.environments.find((e) => mayAccess(vault, e, 'read'))
  const shown: EnvironmentInfo | undefined = vault.environments.find((e) => e.name === o.env && mayAccess(vault, e, 'read')) ?? readable
  const tabs: [VaultTabId, string, string][] = [
    ['variables', 'Variables', tabPath(vault.id, 'variables')],
    ['pushes', pending ? `Pushes (${pending})` : 'Pushes', tabPath(vault.id, 'pushes')],
    ...(shown ? [['history', 'History', historyPath(vault.id, shown.name)] as [VaultTabId, string, string]] : []),
    ['members', 'Members', tabPath(vault.id, 'members')],
    ['access-log', 'Access log', tabPath(vault.id, 'access-log')],
    ['settings', 'Settings', settingsPath(vault.id)],
  ]
  return html`<p class="crumbs"><a href="${pagePath(deps, '/')}">Your vaults</a>${
    o.ownHeading ? html` › <a href="${pagePath(deps, tabPath(vault.id, 'variables'))}">${vault.name}</a>` : ''
  }</p>
${o.ownHeading ? '' : html`<h1>${vault.name}</h1>`}
<p>Your role: <span class="role role-${vault.role}">${vault.role}</span></p>
${vault.role === 'viewer' ? html`<p class="hint">As a viewer you see the names of variables, not their values.</p>` : ''}
<nav class="tabs" aria-label="Vault">${tabs.map(
    ([id, label, href]) => html`<a href="${pagePath(deps, href)}"${id === current ? html` aria-current="page" class="current"` : ''}>${label}</a>`,
  )}</nav>`
}

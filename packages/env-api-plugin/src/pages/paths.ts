import { pagePath, type PageDeps } from './context.js'

/** The paths of a vault's pages, in one place: every page links to the others through here (no page imports another's routes). */

/** A vault's page, with the plugin's base path. */
export function vaultUrl(deps: PageDeps, vaultId: string): string {
  return pagePath(deps, `/v/${encodeURIComponent(vaultId)}`)
}

export function historyPath(vaultId: string, environment: string): string {
  return `/v/${encodeURIComponent(vaultId)}/history/${encodeURIComponent(environment)}`
}

export function changePath(vaultId: string, changeId: string): string {
  return `/v/${encodeURIComponent(vaultId)}/changes/${encodeURIComponent(changeId)}`
}

export function settingsPath(vaultId: string): string {
  return `/v/${encodeURIComponent(vaultId)}/settings`
}

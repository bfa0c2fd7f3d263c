/**
 * Where a push is reviewed: `/v/:vault/variables/imports/:import` under the plugin's base URL.
 * One place for the address the API's `url`, MCP's `review_url`, webhooks and the pages give.
 */
export function reviewPath(vaultId: string, importId: string): string {
  return `/v/${encodeURIComponent(vaultId)}/variables/imports/${encodeURIComponent(importId)}`
}

/** The review page's absolute URL (`baseUrl` has no trailing slash). */
export function reviewUrl(baseUrl: string, vaultId: string, importId: string): string {
  return `${baseUrl}${reviewPath(vaultId, importId)}`
}

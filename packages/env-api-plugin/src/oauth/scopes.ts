/** Always granted: list vaults and read environments. */
export const SCOPE_READ = 'env:read'
/** Granted only when asked for and the consent box "Allow this sign-in to send .env files" was ticked. */
export const SCOPE_PUSH = 'env:push'
export const SUPPORTED_SCOPES: readonly string[] = Object.freeze([SCOPE_READ, SCOPE_PUSH])

/**
 * Parses a `scope` parameter (space-separated, RFC 6749 §3.3). Absent or
 * empty means the default (`env:read`). Null when a scope is unknown.
 */
export function parseScope(scope: string | undefined): string[] | null {
  if (scope === undefined) return []
  const out: string[] = []
  for (const s of scope.split(' ')) {
    if (s === '') continue
    if (!SUPPORTED_SCOPES.includes(s)) return null
    if (!out.includes(s)) out.push(s)
  }
  return out
}

/** What a sign-in gets: `env:read` always; `env:push` only when asked for and allowed. */
export function grantedScopes(requested: readonly string[], pushAllowed: boolean): string[] {
  return requested.includes(SCOPE_PUSH) && pushAllowed ? [SCOPE_READ, SCOPE_PUSH] : [SCOPE_READ]
}

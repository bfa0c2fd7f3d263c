/** Names, environments and history: always granted to an MCP sign-in. */
export const MCP_READ = 'mcp:read'
/** Pushes for a person to review: only when asked for and the consent box "Propose changes" was ticked. */
export const MCP_PROPOSE = 'mcp:propose'
export const MCP_SCOPES: readonly string[] = Object.freeze([MCP_READ, MCP_PROPOSE])

/** Parses an MCP `scope` parameter; absent means `mcp:read`; null when a scope is not an MCP one. */
export function parseMcpScope(scope: string | undefined): string[] | null {
  if (scope === undefined) return []
  const out: string[] = []
  for (const s of scope.split(' ')) {
    if (s === '') continue
    if (!MCP_SCOPES.includes(s)) return null
    if (!out.includes(s)) out.push(s)
  }
  return out
}

export function grantedMcpScopes(requested: readonly string[], proposeAllowed: boolean): string[] {
  return requested.includes(MCP_PROPOSE) && proposeAllowed ? [MCP_READ, MCP_PROPOSE] : [MCP_READ]
}

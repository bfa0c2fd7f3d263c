import type { ResolvedOptions } from '../options.js'
import { SUPPORTED_SCOPES } from '../oauth/scopes.js'
import { MCP_SCOPES } from './scopes.js'

/** What the authorization server metadata adds once the MCP endpoint is on (overrides the CLI-only fields). */
export function mcpAuthorizationServerMetadata(opts: ResolvedOptions): Record<string, unknown> {
  if (!opts.mcp) return {}
  return {
    scopes_supported: [...SUPPORTED_SCOPES, ...MCP_SCOPES],
    protected_resources: [opts.resource, opts.mcp.resource],
    ...(opts.core.domain.keepsClientRegistrations() ? { registration_endpoint: `${opts.baseUrl}/oauth/register` } : {}),
  }
}

/** RFC 9728 metadata of `{baseUrl}/mcp`. */
export function mcpProtectedResourceMetadata(opts: ResolvedOptions): Record<string, unknown> {
  return {
    resource: opts.mcp?.resource,
    authorization_servers: [opts.baseUrl],
    bearer_methods_supported: ['header'],
    scopes_supported: [...MCP_SCOPES],
    resource_name: `${opts.serviceName} MCP endpoint (names, never values)`,
  }
}

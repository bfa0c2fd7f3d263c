import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { ResolvedOptions } from '../../options.js'
import { SUPPORTED_SCOPES } from '../../oauth/scopes.js'
import { GRANT_TOKEN_EXCHANGE } from '../../oauth/grants/token-exchange.js'
import { mcpAuthorizationServerMetadata, mcpProtectedResourceMetadata } from '../../mcp/metadata.js'

/** Public documents: cacheable for a few minutes, no cookies involved. */
const DISCOVERY_HEADERS = Object.freeze({ 'cache-control': 'public, max-age=300' })

/** RFC 8414 authorization server metadata. Every URL comes from `baseUrl`, never from the request. */
export function authorizationServerMetadata(opts: ResolvedOptions): Record<string, unknown> {
  const base = opts.baseUrl
  return {
    issuer: base,
    authorization_endpoint: `${base}/oauth/authorize`,
    token_endpoint: `${base}/oauth/token`,
    revocation_endpoint: `${base}/oauth/revoke`,
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token', GRANT_TOKEN_EXCHANGE],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['none'],
    revocation_endpoint_auth_methods_supported: ['none'],
    scopes_supported: [...SUPPORTED_SCOPES],
    authorization_response_iss_parameter_supported: true,
    client_id_metadata_document_supported: true,
    protected_resources: [opts.resource],
    ...(opts.mcp ? mcpAuthorizationServerMetadata(opts) : {}),
  }
}

/** RFC 9728 protected resource metadata of `{baseUrl}/api/env`. */
export function protectedResourceMetadata(opts: ResolvedOptions): Record<string, unknown> {
  return {
    resource: opts.resource,
    authorization_servers: [opts.baseUrl],
    bearer_methods_supported: ['header'],
    scopes_supported: [...SUPPORTED_SCOPES],
    resource_name: `${opts.serviceName} environment variables API`,
  }
}

/**
 * The well-known documents, path-inserted (RFC 8414 §3.1, RFC 9728 §3.1):
 * `/.well-known/oauth-authorization-server{basePath}` and
 * `/.well-known/oauth-protected-resource{basePath}/api/env`. Nothing at the
 * root protected-resource path: that document would name the wrong resource.
 */
export async function metadataRoutes(app: FastifyInstance, { opts }: { opts: ResolvedOptions }): Promise<void> {
  const asBody = JSON.stringify(authorizationServerMetadata(opts))
  const prmBody = JSON.stringify(protectedResourceMetadata(opts))

  app.get(`/.well-known/oauth-authorization-server${opts.basePath}`, async function authorizationServerDocument(_request: FastifyRequest, reply: FastifyReply) {
    return reply.headers(DISCOVERY_HEADERS).type('application/json').send(asBody)
  })

  app.get(
    `/.well-known/oauth-protected-resource${opts.basePath}/api/env`,
    async function protectedResourceDocument(_request: FastifyRequest, reply: FastifyReply) {
      return reply.headers(DISCOVERY_HEADERS).type('application/json').send(prmBody)
    },
  )

  if (opts.mcp) {
    const mcpPrmBody = JSON.stringify(mcpProtectedResourceMetadata(opts))
    app.get(
      `/.well-known/oauth-protected-resource${opts.mcp.path}`,
      async function mcpProtectedResourceDocument(_request: FastifyRequest, reply: FastifyReply) {
        return reply.headers(DISCOVERY_HEADERS).type('application/json').send(mcpPrmBody)
      },
    )
  }
}

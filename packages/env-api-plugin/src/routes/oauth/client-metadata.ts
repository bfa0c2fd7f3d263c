import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { ResolvedOptions } from '../../options.js'
import { REGISTERED_REDIRECT_URIS } from '../../oauth/redirect-uri.js'
import { SUPPORTED_SCOPES } from '../../oauth/scopes.js'

/** Shown on the consent page as who asks. */
export function cliClientName(opts: ResolvedOptions): string {
  return `${opts.serviceName} command-line client`
}

/**
 * The CLI's Client ID Metadata Document: its `client_id` is its own URL.
 * The loopback redirect URIs are listed without a port; any port is allowed
 * at authorize time (RFC 8252 §7.3).
 */
export function cliClientMetadata(opts: ResolvedOptions): Record<string, unknown> {
  return {
    client_id: opts.cliClientId,
    client_name: cliClientName(opts),
    client_uri: opts.baseUrl,
    application_type: 'native',
    redirect_uris: [...REGISTERED_REDIRECT_URIS],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
    scope: SUPPORTED_SCOPES.join(' '),
  }
}

/** `GET {basePath}/cli/oauth-client.json`, cacheable (CIMD §4.4). */
export async function clientMetadataRoutes(app: FastifyInstance, { opts }: { opts: ResolvedOptions }): Promise<void> {
  const body = JSON.stringify(cliClientMetadata(opts))
  app.get(`${opts.basePath}/cli/oauth-client.json`, async function cliClientDocument(_request: FastifyRequest, reply: FastifyReply) {
    return reply.header('cache-control', 'public, max-age=3600').type('application/json').send(body)
  })
}

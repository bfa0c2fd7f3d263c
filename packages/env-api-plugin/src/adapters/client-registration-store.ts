/**
 * The MCP clients this server knows by name: those registered through
 * Dynamic Client Registration (RFC 7591) and those known by a Client ID
 * Metadata Document once a person allowed them (kept so the Sign-ins page
 * names them). Two methods; a backend without them serves no registration
 * endpoint. The MCP work (issue 21) owns this file.
 */

import type { ChangeResult } from './results.js'

export interface ClientRegistration {
  /** a random id for a registered client; the document's URL for a metadata-document client */
  readonly clientId: string
  readonly kind: 'registered' | 'document'
  /** `client_name` as the client gave it (shown escaped, never trusted) */
  readonly name: string
  /** exact redirect URIs (a loopback one matches any port at authorize time) */
  readonly redirectUris: readonly string[]
  readonly createdAt: Date
  /** when an unused registration stops counting; null once a person allowed the client */
  readonly expiresAt: Date | null
}

export interface ClientRegistrationStore {
  /** Inserts or replaces the registration of `clientId` (whole record). Never refused. */
  saveClientRegistration?(registration: ClientRegistration): Promise<ChangeResult<never>>
  /** The registration of a client id (expired or not), or null. */
  findClientRegistration?(clientId: string): Promise<ClientRegistration | null>
}

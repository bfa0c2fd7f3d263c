import type { ClientRegistration } from '../adapters/client-registration-store.js'
import type { DomainDeps } from './deps.js'

/**
 * MCP client registrations (RFC 7591 and metadata-document clients a
 * person allowed). Optional in storage: without them the MCP endpoint
 * offers no registration endpoint and knows document clients only.
 */
export function keepsClientRegistrations(d: DomainDeps): boolean {
  return typeof d.storage.saveClientRegistration === 'function' && typeof d.storage.findClientRegistration === 'function'
}

/** The registration of a client id, or null (none, or a storage that keeps none). */
export async function findClientRegistration(d: DomainDeps, clientId: string): Promise<ClientRegistration | null> {
  return d.storage.findClientRegistration ? d.storage.findClientRegistration(clientId) : null
}

/** Stores (or replaces) a registration; false when storage keeps none. */
export async function saveClientRegistration(d: DomainDeps, registration: ClientRegistration): Promise<boolean> {
  if (!d.storage.saveClientRegistration) return false
  await d.storage.saveClientRegistration(registration)
  return true
}

import type { ClientRegistration } from '../adapters/client-registration-store.js'
import type { ResolvedOptions } from '../options.js'
import { createClientDocumentFetcher, isDocumentClientId } from './client-document.js'
import type { GrantTarget } from '../oauth/grants/issue.js'
import { redirectKind } from './redirect.js'
import { parseMcpScope } from './scopes.js'

/** An MCP client as the authorization server knows it. */
export interface McpClient {
  readonly clientId: string
  readonly kind: 'registered' | 'document'
  /** what the client calls itself (escaped wherever shown) */
  readonly name: string
  readonly redirectUris: readonly string[]
}

export type ClientLookup = { readonly ok: true; readonly client: McpClient } | { readonly ok: false; readonly why: string }

/** Registered client ids: `mcp_` and 32 random base64url characters; nothing else is looked up in the store. */
export const REGISTERED_CLIENT_ID = /^mcp_[A-Za-z0-9_-]{32}$/

/** An unused registration (no person allowed the client) stops counting after a day. */
export const UNUSED_REGISTRATION_MS = 24 * 60 * 60 * 1000

/**
 * Finds MCP clients: a registered one in the store (unless it expired
 * unused), a metadata-document one by fetching its document (cached).
 * One per plugin instance, shared by authorize and token.
 */
export function createMcpClients(opts: ResolvedOptions) {
  const documents = createClientDocumentFetcher({ allowHttpLoopback: opts.mcp?.allowHttpLoopbackClients === true, now: opts.now })
  const domain = opts.core.domain

  async function find(clientId: string): Promise<ClientLookup> {
    if (REGISTERED_CLIENT_ID.test(clientId)) {
      const r = await domain.findClientRegistration(clientId)
      if (r?.kind !== 'registered' || (r.expiresAt !== null && opts.now().getTime() >= r.expiresAt.getTime())) {
        return { ok: false, why: 'this client is not registered here, or its registration expired unused; register it again' }
      }
      return { ok: true, client: { clientId, kind: 'registered', name: r.name, redirectUris: r.redirectUris } }
    }
    if (!isDocumentClientId(clientId, opts.mcp?.allowHttpLoopbackClients === true)) {
      return { ok: false, why: 'the client_id is neither a registered client nor the https URL of a client metadata document' }
    }
    const d = await documents(clientId)
    if (!d.ok) return d
    return { ok: true, client: { clientId, kind: 'document', name: d.document.name, redirectUris: d.document.redirectUris } }
  }

  /** Once a person allowed a client: a registration no longer expires, a document client is remembered by name. */
  async function remember(c: McpClient): Promise<void> {
    if (!domain.keepsClientRegistrations()) return
    const prior = await domain.findClientRegistration(c.clientId)
    if (prior && prior.expiresAt === null && prior.name === c.name) return
    const r: ClientRegistration = {
      clientId: c.clientId,
      kind: c.kind,
      name: c.name,
      redirectUris: c.redirectUris,
      createdAt: prior?.createdAt ?? opts.now(),
      expiresAt: null,
    }
    await domain.saveClientRegistration(r)
  }

  /** The name a sign-in of this client shows on the Sign-ins page, without any request. */
  async function nameOf(clientId: string): Promise<string | null> {
    const r = await domain.findClientRegistration(clientId)
    return r?.name ?? null
  }

  return { find, remember, nameOf }
}

export type McpClients = ReturnType<typeof createMcpClients>

/** A client known only by redirects to this computer: its name is only its own word. */
export function knownOnlyByLocalhost(c: McpClient): boolean {
  return c.kind === 'registered' && c.redirectUris.every((u) => redirectKind(u) === 'loopback')
}

const perPlugin = new WeakMap<ResolvedOptions, McpClients>()

/** The one client finder of a plugin instance (its document cache is shared by authorize and token). */
export function mcpClientsOf(opts: ResolvedOptions): McpClients {
  let c = perPlugin.get(opts)
  if (!c) {
    c = createMcpClients(opts)
    perPlugin.set(opts, c)
  }
  return c
}

/** Code and refresh grants of MCP clients: a known MCP client, `{baseUrl}/mcp`, MCP scopes. */
export function mcpGrantTarget(opts: ResolvedOptions): GrantTarget {
  const clients = mcpClientsOf(opts)
  return {
    knowsClient: async (id) => (await clients.find(id)).ok,
    unknownClient: 'this client is not registered here and has no client metadata document this service accepts',
    resource: opts.mcp?.resource ?? '',
    wrongResource: 'resource must be exactly the MCP endpoint of this service',
    parseScope: parseMcpScope,
    showsPerson: false,
  }
}

import type { ResolveHost } from '../domain/webhook-url.js'
import { fetchIssuerJson, IssuerFetchRefused } from '../oauth/workload/fetch-json.js'
import { redirectKind } from './redirect.js'

/**
 * Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document):
 * an MCP client's `client_id` is the https URL of a JSON document naming it
 * and its redirect URIs. Fetched as CI issuers' documents are (fetchIssuerJson:
 * the webhooks' address rules, public addresses only, checked on the socket's
 * own lookup; no redirect followed), at most `MAX_DOCUMENT_BYTES`, cut after
 * `FETCH_TIMEOUT_MS`, kept for `CACHE_MS` (a refusal for a minute), at most
 * `CACHE_ENTRIES` documents.
 */
export const MAX_DOCUMENT_BYTES = 16 * 1024
export const FETCH_TIMEOUT_MS = 5000
const CACHE_MS = 10 * 60_000
const REFUSAL_CACHE_MS = 60_000
const CACHE_ENTRIES = 500

export interface ClientDocument {
  readonly clientId: string
  readonly name: string
  readonly redirectUris: readonly string[]
}

export type DocumentOutcome = { readonly ok: true; readonly document: ClientDocument } | { readonly ok: false; readonly why: string }

const PRIVATE = 'the address is private, loopback or link-local; client documents are fetched from public addresses only'
const HTTP_LOOPBACK = /^http:\/\/127\.0\.0\.1:[1-9][0-9]{0,4}\/[^#]*$/

/** Whether a client id has the shape of a metadata document URL (no request made). */
export function isDocumentClientId(clientId: string, allowHttpLoopback: boolean): boolean {
  if (clientId.length > 2000 || clientId.includes('#')) return false
  if (allowHttpLoopback && HTTP_LOOPBACK.test(clientId)) return true
  let url: URL
  try {
    url = new URL(clientId)
  } catch {
    return false
  }
  return url.protocol === 'https:' && !url.username && !url.password && url.pathname !== '/' && url.href === clientId
}

/** Checks a fetched document: its `client_id` is its own URL, its redirect URIs are acceptable, it is a public client. */
export function documentProblem(url: string, doc: unknown): DocumentOutcome {
  if (!doc || typeof doc !== 'object' || Array.isArray(doc)) return { ok: false, why: 'the client metadata document is not a JSON object' }
  const d = doc as Record<string, unknown>
  if (d['client_id'] !== url) return { ok: false, why: 'the client metadata document names another client_id than its own URL' }
  const uris = d['redirect_uris']
  if (!Array.isArray(uris) || uris.length === 0 || uris.length > 20 || !uris.every((u) => typeof u === 'string' && redirectKind(u) !== null)) {
    return { ok: false, why: 'the client metadata document lists no acceptable redirect_uris' }
  }
  const auth = d['token_endpoint_auth_method']
  if (auth !== undefined && auth !== 'none') return { ok: false, why: 'the client is not a public client (token_endpoint_auth_method must be none)' }
  const rawName = typeof d['client_name'] === 'string' ? d['client_name'].trim().slice(0, 100) : ''
  return { ok: true, document: { clientId: url, name: rawName || new URL(url).host, redirectUris: uris as string[] } }
}

interface Cached {
  readonly until: number
  readonly outcome: DocumentOutcome
}

/** A fetcher with its own cache, one per plugin instance. */
export function createClientDocumentFetcher(o: { allowHttpLoopback: boolean; now: () => Date; resolveHost?: ResolveHost }) {
  const cache = new Map<string, Cached>()
  const inFlight = new Map<string, Promise<DocumentOutcome>>()

  async function fetchOnce(url: string): Promise<{ outcome: DocumentOutcome; maxAgeMs: number }> {
    let parsed: unknown
    try {
      parsed = await fetchIssuerJson(new URL(url), {
        timeoutMs: FETCH_TIMEOUT_MS,
        maxBytes: MAX_DOCUMENT_BYTES,
        allowLoopback: o.allowHttpLoopback && HTTP_LOOPBACK.test(url),
        ...(o.resolveHost ? { resolveHost: o.resolveHost } : {}),
      })
    } catch (err) {
      const why = err instanceof IssuerFetchRefused ? (err.message.startsWith('the address is private') ? PRIVATE : err.message) : 'the request failed'
      return { outcome: { ok: false, why: `the client metadata document could not be fetched: ${why}` }, maxAgeMs: REFUSAL_CACHE_MS }
    }
    const outcome = documentProblem(url, parsed)
    return { outcome, maxAgeMs: outcome.ok ? CACHE_MS : REFUSAL_CACHE_MS }
  }

  return async function clientDocument(url: string): Promise<DocumentOutcome> {
    const now = o.now().getTime()
    const hit = cache.get(url)
    if (hit && hit.until > now) return hit.outcome
    const pending = inFlight.get(url)
    if (pending) return pending
    const p = fetchOnce(url).then(({ outcome, maxAgeMs }) => {
      if (cache.size >= CACHE_ENTRIES) cache.delete(cache.keys().next().value as string)
      cache.set(url, { until: o.now().getTime() + maxAgeMs, outcome })
      return outcome
    })
    inFlight.set(url, p)
    try {
      return await p
    } finally {
      inFlight.delete(url)
    }
  }
}

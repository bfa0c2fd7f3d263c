import http from 'node:http'
import https from 'node:https'
import { isIP } from 'node:net'
import { hostOf, isPublicAddress, systemResolveHost, type ResolveHost } from '../domain/webhook-url.js'
import { checkedLookup, describe, RefusedAddress } from '../webhooks/send.js'
import { redirectKind } from './redirect.js'

/**
 * Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document):
 * an MCP client's `client_id` is the https URL of a JSON document naming it
 * and its redirect URIs. Fetched with the webhooks' address rules (public
 * addresses only, checked on the socket's own lookup; no redirect followed),
 * at most `MAX_DOCUMENT_BYTES`, cut after `FETCH_TIMEOUT_MS`, kept for
 * `CACHE_MS` (a refusal for a minute), at most `CACHE_ENTRIES` documents.
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
    const r = await getBounded(url, o.allowHttpLoopback && HTTP_LOOPBACK.test(url), o.resolveHost ?? systemResolveHost)
    if (!r.ok) return { outcome: { ok: false, why: `the client metadata document could not be fetched: ${r.why}` }, maxAgeMs: REFUSAL_CACHE_MS }
    let parsed: unknown
    try {
      parsed = JSON.parse(r.body)
    } catch {
      return { outcome: { ok: false, why: 'the client metadata document is not valid JSON' }, maxAgeMs: REFUSAL_CACHE_MS }
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

type Got = { readonly ok: true; readonly body: string } | { readonly ok: false; readonly why: string }

/** GET `url`: 200 with a JSON media type, at most MAX_DOCUMENT_BYTES, within FETCH_TIMEOUT_MS; no redirect. */
function getBounded(raw: string, loopbackAllowed: boolean, resolveHost: ResolveHost): Promise<Got> {
  const url = new URL(raw)
  const host = hostOf(url)
  if (!loopbackAllowed && isIP(host) && !isPublicAddress(host)) return Promise.resolve({ ok: false, why: describe(new RefusedAddress(), FETCH_TIMEOUT_MS) })
  const client = url.protocol === 'https:' ? https : http
  const signal = AbortSignal.timeout(FETCH_TIMEOUT_MS)
  return new Promise<Got>((resolve) => {
    let settled = false
    const done = (g: Got) => {
      if (!settled) {
        settled = true
        resolve(g)
      }
    }
    try {
      const req = client.request(
        url,
        {
          method: 'GET',
          agent: false,
          signal,
          headers: { accept: 'application/json' },
          ...(loopbackAllowed ? {} : { lookup: checkedLookup(resolveHost) as never }),
        },
        (res) => {
          const status = res.statusCode ?? 0
          const type =
            String(res.headers['content-type'] ?? '')
              .split(';')[0]
              ?.trim()
              .toLowerCase() ?? ''
          if (status !== 200) {
            res.resume()
            return done({ ok: false, why: status >= 300 && status < 400 ? `redirect not followed (HTTP ${status})` : `HTTP ${status}` })
          }
          if (type !== 'application/json' && !type.endsWith('+json')) {
            res.resume()
            return done({ ok: false, why: 'the answer is not JSON' })
          }
          const chunks: Buffer[] = []
          let size = 0
          res.on('data', (c: Buffer) => {
            size += c.length
            if (size > MAX_DOCUMENT_BYTES) {
              req.destroy()
              done({ ok: false, why: `larger than ${MAX_DOCUMENT_BYTES} bytes` })
            } else chunks.push(c)
          })
          res.on('end', () => done({ ok: true, body: Buffer.concat(chunks).toString('utf8') }))
          res.on('error', (err) => done({ ok: false, why: describe(signal.aborted ? signal.reason : err, FETCH_TIMEOUT_MS) }))
        },
      )
      req.on('error', (err) => done({ ok: false, why: describe(signal.aborted ? signal.reason : err, FETCH_TIMEOUT_MS) }))
      req.end()
    } catch (err) {
      done({ ok: false, why: describe(err, FETCH_TIMEOUT_MS) })
    }
  })
}

import { http, https } from '../node-http.js'
import type { LookupAddress, LookupOneOptions } from 'node:dns'
import { isIP } from 'node:net'
import { hostOf, isPublicAddress, systemResolveHost, type ResolveHost } from '../domain/webhook-url.js'

/**
 * One HTTP POST of a delivery. No redirect is followed (node:http never
 * does), the answer's body is drained unread, the whole exchange is cut
 * after `timeoutMs`. Unless private addresses are allowed, the host is
 * resolved here and every address checked, and the connection goes to a
 * checked address (the lookup is the socket's own), so a name that turned
 * private since the webhook was added (DNS rebinding) is refused.
 *
 * The outcome's `error` is our own words, never the URL, the body sent or
 * anything the receiver answered.
 */

export type SendOutcome = { readonly ok: true; readonly status: number } | { readonly ok: false; readonly status: number | null; readonly error: string }

export interface SendInput {
  readonly url: string
  readonly body: string
  readonly headers: Readonly<Record<string, string>>
  readonly timeoutMs: number
  readonly allowPrivate: boolean
  readonly resolveHost?: ResolveHost
}

export class RefusedAddress extends Error {
  constructor() {
    super('refused address')
    this.name = 'RefusedAddress'
  }
}

type LookupCallback = (err: Error | null, address: string | LookupAddress[], family?: number) => void

/**
 * A `lookup` for sockets that resolves with `resolve` and refuses non-public addresses
 * (webhook deliveries, and CI issuers' discovery and JWKS fetches).
 */
export function checkedLookup(resolve: ResolveHost) {
  return (hostname: string, options: LookupOneOptions & { all?: boolean }, callback: LookupCallback): void => {
    resolve(hostname).then(
      (addresses) => {
        if (addresses.length === 0) return callback(Object.assign(new Error('no address'), { code: 'ENOTFOUND' }), '')
        if (!addresses.every(isPublicAddress)) return callback(new RefusedAddress(), '')
        const list = addresses.map((address) => ({ address, family: isIP(address) }))
        if (options?.all) return callback(null, list)
        const first = list[0] as LookupAddress
        return callback(null, first.address, first.family)
      },
      (err: unknown) => callback(err instanceof Error ? err : new Error('lookup failed'), ''),
    )
  }
}

function describe(err: unknown, timeoutMs: number): string {
  if (err instanceof RefusedAddress) return 'refused: the host resolves to a private, loopback or link-local address'
  const e = err as { code?: unknown; name?: unknown } | null
  const code = typeof e?.code === 'string' ? e.code : ''
  const name = typeof e?.name === 'string' ? e.name : ''
  if (name === 'AbortError' || name === 'TimeoutError' || code === 'ABORT_ERR' || code === 'ETIMEDOUT')
    return `no answer within ${timeoutMs >= 1000 ? `${Math.round(timeoutMs / 1000)} s` : `${timeoutMs} ms`}`
  if (code === 'ECONNREFUSED') return 'connection refused'
  if (code === 'ECONNRESET' || code === 'EPIPE') return 'the connection was reset'
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'the host does not resolve'
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return 'the host cannot be reached'
  if (code.startsWith('ERR_TLS') || code.includes('CERT') || code.startsWith('ERR_SSL') || code === 'DEPTH_ZERO_SELF_SIGNED_CERT')
    return 'the TLS connection failed (certificate or protocol)'
  return 'the request failed'
}

export async function sendWebhook(input: SendInput): Promise<SendOutcome> {
  const url = new URL(input.url)
  const host = hostOf(url)
  if (!input.allowPrivate && isIP(host) && !isPublicAddress(host)) return { ok: false, status: null, error: describe(new RefusedAddress(), input.timeoutMs) }
  const client = url.protocol === 'https:' ? https : url.protocol === 'http:' ? http : null
  if (!client) return { ok: false, status: null, error: 'the URL is not http(s)' }
  const signal = AbortSignal.timeout(input.timeoutMs)
  return new Promise<SendOutcome>((resolve) => {
    let settled = false
    const done = (o: SendOutcome) => {
      if (!settled) {
        settled = true
        resolve(o)
      }
    }
    try {
      const req = client.request(
        url,
        {
          method: 'POST',
          agent: false,
          signal,
          headers: { ...input.headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(input.body)) },
          ...(input.allowPrivate ? {} : { lookup: checkedLookup(input.resolveHost ?? systemResolveHost) as never }),
        },
        (res) => {
          const status = res.statusCode ?? 0
          res.resume() // drained, never read or kept
          res.on('error', () => {})
          if (status >= 200 && status < 300) done({ ok: true, status })
          else if (status >= 300 && status < 400) done({ ok: false, status, error: `redirect not followed (HTTP ${status})` })
          else done({ ok: false, status, error: `HTTP ${status}` })
        },
      )
      req.on('error', (err) => done({ ok: false, status: null, error: describe(signal.aborted ? signal.reason : err, input.timeoutMs) }))
      req.end(input.body)
    } catch (err) {
      done({ ok: false, status: null, error: describe(err, input.timeoutMs) })
    }
  })
}

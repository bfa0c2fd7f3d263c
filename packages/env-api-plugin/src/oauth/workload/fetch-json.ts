import { http, https } from '../../node-http.js'
import { isIP } from 'node:net'
import { hostOf, isPublicAddress, systemResolveHost, type ResolveHost } from '../../domain/webhook-url.js'
import { checkedLookup, RefusedAddress } from '../../webhooks/send.js'

/** A discovery document or a JWKS is a few KB; nothing past this is read. */
export const ISSUER_DOCUMENT_MAX_BYTES = 256 * 1024

/** Why an issuer's document could not be had: for the log only. */
export class IssuerFetchRefused extends Error {
  constructor(reason: string, options?: { cause?: unknown }) {
    super(reason, options)
    this.name = 'IssuerFetchRefused'
  }
}

export interface IssuerFetchOptions {
  /** the whole exchange, connection to last byte */
  readonly timeoutMs: number
  readonly maxBytes?: number
  /** `ENVKEEP_CI_ALLOW_HTTP_ISSUERS=loopback`: 127.0.0.1 may be called (the test issuer); nothing else private */
  readonly allowLoopback: boolean
  readonly resolveHost?: ResolveHost
}

const PRIVATE = 'the address is private, loopback or link-local; CI issuers are called on public addresses only'

/**
 * GETs a CI issuer's discovery document or JWKS as JSON, with the SSRF
 * rules of webhooks: every address the host resolves to must be public,
 * checked inside the socket's own lookup (so the connection goes to a
 * checked address, whatever DNS answers next); no redirect is followed; the
 * body is streamed and dropped past `maxBytes`; the whole exchange is cut
 * after `timeoutMs`. Only `http://127.0.0.1` is let through, and only with
 * the loopback test switch.
 */
export function fetchIssuerJson(url: URL, o: IssuerFetchOptions): Promise<unknown> {
  const max = o.maxBytes ?? ISSUER_DOCUMENT_MAX_BYTES
  const host = hostOf(url)
  const loopbackTest = o.allowLoopback && url.hostname === '127.0.0.1'
  if (!loopbackTest && isIP(host) && !isPublicAddress(host)) return Promise.reject(new IssuerFetchRefused(PRIVATE))
  const client = url.protocol === 'https:' ? https : url.protocol === 'http:' && loopbackTest ? http : null
  if (!client) return Promise.reject(new IssuerFetchRefused('the URL is not https'))
  return new Promise<unknown>((resolve, reject) => {
    let settled = false
    const finish = (err: Error | null, value?: unknown) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      req.destroy()
      if (err) reject(err)
      else resolve(value)
    }
    const req = client.request(url, {
      method: 'GET',
      agent: false,
      headers: { accept: 'application/json' },
      ...(loopbackTest ? {} : { lookup: checkedLookup(o.resolveHost ?? systemResolveHost) as never }),
    })
    const timer = setTimeout(() => finish(new IssuerFetchRefused(`no answer within ${o.timeoutMs} ms`)), o.timeoutMs)
    timer.unref()
    req.on('error', (err) =>
      finish(err instanceof RefusedAddress ? new IssuerFetchRefused(PRIVATE) : new IssuerFetchRefused('the request failed', { cause: err })),
    )
    req.on('response', (res) => {
      if (res.statusCode !== 200) {
        res.resume()
        return finish(
          new IssuerFetchRefused(
            `answered HTTP ${res.statusCode ?? 0}${res.statusCode && res.statusCode >= 300 && res.statusCode < 400 ? ' (redirects are not followed)' : ''}`,
          ),
        )
      }
      const declared = Number(res.headers['content-length'])
      if (Number.isFinite(declared) && declared > max) return finish(new IssuerFetchRefused(`over ${max} bytes`))
      const chunks: Buffer[] = []
      let size = 0
      res.on('data', (chunk: Buffer) => {
        size += chunk.length
        if (size > max) return finish(new IssuerFetchRefused(`over ${max} bytes`))
        chunks.push(chunk)
      })
      res.on('error', (err) => finish(new IssuerFetchRefused('the answer broke off', { cause: err })))
      res.on('end', () => {
        try {
          finish(null, JSON.parse(Buffer.concat(chunks).toString('utf8')))
        } catch (cause) {
          finish(new IssuerFetchRefused('not JSON', { cause }))
        }
      })
    })
    req.end()
  })
}

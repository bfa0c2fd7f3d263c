import { isIP } from 'node:net'
import { hostOf, isPublicAddress } from '../../domain/webhook-url.js'

/**
 * Which OIDC issuers a CI identity may name: https only, with no query,
 * fragment or credentials. Plain http is allowed for `http://127.0.0.1:<port>`
 * only when the server is started with `ENVKEEP_CI_ALLOW_HTTP_ISSUERS=loopback`
 * (tests), never for another host.
 */
export function issuerProblem(issuer: string, allowHttpLoopback: boolean): string | null {
  let url: URL
  try {
    url = new URL(issuer)
  } catch {
    return 'the issuer must be an absolute URL'
  }
  if (url.search || url.hash || url.username || url.password) return 'the issuer must have no query, fragment or credentials'
  if (issuer.endsWith('/')) return 'the issuer must not end with a slash'
  if (url.protocol === 'http:' && allowHttpLoopback && url.hostname === '127.0.0.1') return null
  if (url.protocol !== 'https:') return allowHttpLoopback ? 'the issuer must be https (or http://127.0.0.1)' : 'the issuer must be https'
  // an address written out must be public (a name is checked when it is called: fetch-json.ts)
  const host = hostOf(url)
  if (isIP(host) && !isPublicAddress(host)) return 'the issuer must be on a public address (not loopback, private or link-local)'
  return null
}

/** `{issuer}/.well-known/openid-configuration` (OIDC Discovery 1.0 §4: appended to the issuer's path). */
export function discoveryUrl(issuer: string): URL {
  return new URL(`${issuer}/.well-known/openid-configuration`)
}

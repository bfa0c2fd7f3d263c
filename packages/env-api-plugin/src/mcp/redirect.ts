/**
 * Redirect URIs of MCP clients: a loopback one (`http://127.0.0.1`,
 * `http://[::1]` or `http://localhost`, any port at authorize time, RFC
 * 8252 §7.3), an https one, or a private-use scheme (`cursor://…`,
 * `com.example.app:/…`, RFC 8252 §7.1). Matching is exact on the string
 * otherwise. No query, no fragment, no userinfo, never a scheme a browser runs.
 */
const LOOPBACK = /^http:\/\/(127\.0\.0\.1|\[::1\]|localhost)(?::([1-9][0-9]{0,4}))?(\/[A-Za-z0-9\-._~!$&'()*+,;=:@/%]*)?$/
const FORBIDDEN_SCHEMES = new Set(['javascript', 'data', 'file', 'vbscript', 'about', 'blob', 'ftp', 'ws', 'wss', 'http', 'https', 'chrome', 'view-source'])
const MAX_URI = 2000

export type RedirectKind = 'loopback' | 'https' | 'private-use'

/** What kind of redirect URI this is, or null when it may never be one. */
export function redirectKind(uri: string): RedirectKind | null {
  if (uri.length === 0 || uri.length > MAX_URI || /[\s\u0000-\u001f\u007f]/.test(uri) || uri.includes('#')) return null
  if (LOOPBACK.test(uri)) {
    const port = /:([0-9]+)/.exec(uri.slice(7))?.[1]
    if (port !== undefined && Number(port) > 65535) return null
    return 'loopback'
  }
  let url: URL
  try {
    url = new URL(uri)
  } catch {
    return null
  }
  if (url.username || url.password || url.search) return null
  const scheme = url.protocol.slice(0, -1)
  if (scheme === 'https') return url.hostname ? 'https' : null
  if (!/^[a-z][a-z0-9+.-]*$/.test(scheme) || FORBIDDEN_SCHEMES.has(scheme)) return null
  return 'private-use'
}

/** A loopback URI without its port, for matching any port. */
function withoutPort(uri: string): string {
  return uri.replace(/^(http:\/\/(?:127\.0\.0\.1|\[::1\]|localhost)):[0-9]+/, '$1')
}

/** Whether `uri` is one of `registered` (a loopback one on any port). */
export function redirectMatches(uri: string, registered: readonly string[]): boolean {
  const kind = redirectKind(uri)
  if (!kind) return false
  if (registered.includes(uri)) return true
  if (kind !== 'loopback') return false
  const bare = withoutPort(uri)
  return registered.some((r) => redirectKind(r) === 'loopback' && withoutPort(r) === bare)
}

/** Host (and port) a redirect goes to, for the consent page; the scheme for a private-use one. */
export function redirectTarget(uri: string): string {
  const kind = redirectKind(uri)
  if (kind === 'private-use') return `${uri.slice(0, uri.indexOf(':'))}: (an app on this computer)`
  try {
    return new URL(uri).host
  } catch {
    return uri
  }
}

/** The `form-action` source that lets the consent POST's redirect reach `uri` (Chrome applies it to redirects). */
export function formActionSource(uri: string): string {
  const kind = redirectKind(uri)
  const url = new URL(uri)
  if (kind === 'private-use') return `${url.protocol}`
  if (kind === 'loopback') return `http://${url.hostname}:*`
  return url.origin
}

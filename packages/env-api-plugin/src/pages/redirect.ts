const PROBE = 'http://envkeep.invalid'

/**
 * A redirect target that stays on this service, under `basePath`, and is safe to put in a
 * `Location` header: resolved (no `..` escapes the base path), percent-encoded to printable
 * ASCII (a header cannot carry anything else: `/v/\u2028x` threw after a correct password),
 * and never scheme-relative (`//host`, `/\host`) or another scheme. Anything else gives the
 * service's home, `{basePath}/`. Every redirect to a path a person or a form supplied goes
 * through here.
 */
export function safeRedirectPath(raw: string, basePath: string): string {
  const home = `${basePath}/`
  if (typeof raw !== 'string' || !raw.startsWith('/') || raw.startsWith('//') || raw.includes('\\')) return home
  if (/[\u0000-\u001f\u007f]/.test(raw)) return home
  let url: URL
  try {
    url = new URL(raw, PROBE)
  } catch {
    return home
  }
  if (url.origin !== PROBE) return home
  const out = `${url.pathname}${url.search}${url.hash}`
  if (!/^\/[\x21-\x7e]*$/.test(out) || out.startsWith('//')) return home
  if (basePath !== '' && out !== basePath && !out.startsWith(`${basePath}/`)) return home
  return out
}

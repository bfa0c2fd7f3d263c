import { lookup } from 'node:dns/promises'
import { isIP } from 'node:net'
import ipaddr from 'ipaddr.js'

/**
 * Which URLs a webhook may call (decisions.md: private addresses refused
 * unless `ENVKEEP_WEBHOOK_ALLOW_PRIVATE=true`). Checked when a webhook is
 * added, and again at every delivery (webhooks/send.ts), where the checked
 * addresses are the ones connected to. Reasons never repeat the URL.
 */

export const MAX_WEBHOOK_URL = 2000

/** A host's addresses (every one the resolver knows). */
export type ResolveHost = (hostname: string) => Promise<readonly string[]>

export const systemResolveHost: ResolveHost = async (hostname) => (await lookup(hostname, { all: true, verbatim: true })).map((a) => a.address)

export const PRIVATE_REFUSAL =
  'this URL leads to a private, loopback or link-local address; webhooks call public addresses only (the server setting ENVKEEP_WEBHOOK_ALLOW_PRIVATE=true allows others)'

/**
 * True for an address of the public internet: ipaddr.js's `unicast` range
 * (anything it classifies otherwise is refused: private, loopback,
 * link-local, unique-local, carrier-grade NAT, multicast, reserved,
 * 6to4/Teredo/NAT64/SIIT forms that may hide a private IPv4, …). An IPv6
 * address that carries an IPv4 address inside is judged by that IPv4 too
 * (issue 25: `[::127.0.0.1]`, IPv4-compatible, was taken for public):
 * mapped `::ffff:a.b.c.d` by the IPv4 alone; the deprecated IPv4-compatible
 * `::a.b.c.d` (::/96) never, like ISATAP interface ids over a private IPv4.
 */
export function isPublicAddress(address: string): boolean {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6
  try {
    // ipaddr.js reads any dotted tail (`::a.b.c.d`) as IPv4-mapped: the URL parser's canonical
    // form (`::7f00:1`) keeps IPv4-compatible apart
    parsed = ipaddr.parse(isIP(address) === 6 ? new URL(`http://[${address}]/`).hostname.slice(1, -1) : address)
  } catch {
    return false
  }
  if (parsed.kind() === 'ipv6') {
    const v6 = parsed as ipaddr.IPv6
    if (v6.isIPv4MappedAddress()) return v6.toIPv4Address().range() === 'unicast'
    const p = v6.parts
    // ::/96 (IPv4-compatible, deprecated by RFC 4291), :: and ::1 included: no public host lives there
    if (p.slice(0, 6).every((x) => x === 0)) return false
    for (const inner of embeddedIPv4(p)) if (inner.range() !== 'unicast') return false
  }
  return parsed.range() === 'unicast'
}

function ipv4Of(hi: number, lo: number): ipaddr.IPv4 {
  return new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff])
}

/**
 * The IPv4 addresses an IPv6 address carries, by the forms that embed one: NAT64 (64:ff9b::/96,
 * 64:ff9b:1::/48), SIIT (::ffff:0:a.b.c.d), 6to4 (2002:AABB:CCDD::), Teredo (server and
 * obfuscated client), ISATAP (…:0:5efe:a.b.c.d, also with the u/g bits). The prefixes' own ranges
 * refuse most of them already; this keeps the rule "a hidden private IPv4 is private" explicit.
 */
function embeddedIPv4(p: readonly number[]): ipaddr.IPv4[] {
  const at = (i: number): number => p[i] as number
  const out: ipaddr.IPv4[] = []
  if (at(0) === 0x64 && at(1) === 0xff9b) out.push(ipv4Of(at(6), at(7)))
  if (at(0) === 0 && at(1) === 0 && at(2) === 0 && at(3) === 0 && at(4) === 0xffff && at(5) === 0) out.push(ipv4Of(at(6), at(7)))
  if (at(0) === 0x2002) out.push(ipv4Of(at(1), at(2)))
  if (at(0) === 0x2001 && at(1) === 0) out.push(ipv4Of(at(2), at(3)), ipv4Of(at(6) ^ 0xffff, at(7) ^ 0xffff))
  if ((at(4) & 0xfcff) === 0 && at(5) === 0x5efe) out.push(ipv4Of(at(6), at(7)))
  return out
}

/**
 * A webhook URL as shown and stored (issue 25): origin and first path segment. The rest of
 * the path often is the receiver's own secret (a Slack URL's last segments), so only this
 * form is kept in the clear; the URL itself is sealed (domain/webhooks.ts).
 */
export function shownUrl(url: string): string {
  try {
    const u = new URL(url)
    const segments = u.pathname.split('/').filter(Boolean)
    const more = segments.length > 1 || u.search !== ''
    return `${u.origin}${segments.length > 0 ? `/${segments[0]}` : ''}${more ? '/…' : ''}`
  } catch {
    return '(unreadable URL)'
  }
}

/** The URL's hostname as an address or name to resolve (IPv6 without brackets). */
export function hostOf(url: URL): string {
  return url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname
}

/** Why a URL cannot be a webhook's, by its shape alone; null when it can. */
export function webhookUrlShapeProblem(raw: string): string | null {
  if (raw.length === 0) return 'a webhook needs a URL'
  if (raw.length > MAX_WEBHOOK_URL) return `a webhook URL must be at most ${MAX_WEBHOOK_URL} characters`
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return 'a webhook URL must be an absolute URL, such as https://hooks.example.com/envkeep'
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'a webhook URL must start with https:// or http://'
  if (url.username || url.password) return 'a webhook URL must not hold a user name or password'
  if (url.hash) return 'a webhook URL must not have a #fragment'
  if (!url.hostname) return 'a webhook URL needs a host'
  return null
}

/**
 * Why a URL cannot be a webhook's, looking up its host: every address it
 * resolves to must be public, unless `allowPrivate`. Null when it can.
 */
export async function webhookUrlProblem(raw: string, o: { allowPrivate: boolean; resolveHost?: ResolveHost }): Promise<string | null> {
  const shape = webhookUrlShapeProblem(raw)
  if (shape) return shape
  if (o.allowPrivate) return null
  const host = hostOf(new URL(raw))
  if (isIP(host)) return isPublicAddress(host) ? null : PRIVATE_REFUSAL
  let addresses: readonly string[]
  try {
    addresses = await (o.resolveHost ?? systemResolveHost)(host)
  } catch {
    addresses = []
  }
  if (addresses.length === 0) return 'the host of this URL does not resolve; check the address'
  return addresses.every(isPublicAddress) ? null : PRIVATE_REFUSAL
}

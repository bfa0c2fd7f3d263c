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
 * 6to4/Teredo/NAT64 forms that may hide a private IPv4, …). An IPv4 address
 * written as IPv6 (`::ffff:10.0.0.1`) is judged as IPv4.
 */
export function isPublicAddress(address: string): boolean {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6
  try {
    parsed = ipaddr.parse(address)
  } catch {
    return false
  }
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) parsed = (parsed as ipaddr.IPv6).toIPv4Address()
  return parsed.range() === 'unicast'
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

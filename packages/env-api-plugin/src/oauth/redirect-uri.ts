/**
 * The only redirect URIs the CLI may use: the loopback callback on 127.0.0.1
 * or [::1], any port 1 to 65535, written exactly so. The check is on the raw
 * string (no URL parsing, which would normalise `LOCALHOST`, `127.000.000.001`,
 * `/%63allback`, dot segments or a default port into something that passes).
 */
const LOOPBACK_CALLBACK = /^http:\/\/(127\.0\.0\.1|\[::1\]):([1-9][0-9]{0,4})\/callback$/

export interface LoopbackRedirect {
  /** `127.0.0.1` or `[::1]` */
  readonly host: string
  readonly port: number
}

/** The parsed loopback redirect, or null when `uri` is not exactly an allowed one. */
export function parseLoopbackRedirect(uri: string): LoopbackRedirect | null {
  const m = LOOPBACK_CALLBACK.exec(uri)
  if (!m) return null
  const port = Number(m[2])
  if (port < 1 || port > 65535) return null
  return { host: m[1] as string, port }
}

/** The registered forms, without a port, as published in the client metadata document. */
export const REGISTERED_REDIRECT_URIS: readonly string[] = Object.freeze(['http://127.0.0.1/callback', 'http://[::1]/callback'])

import { CommandFailure, EXIT_FAILURE, EXIT_OK, UsageFailure, type CommandContext } from './context.js'

const TIMEOUT_MS = 5_000

/** The local address of the server's /readyz from its own settings (a wildcard host is asked on loopback). */
export function defaultHealthUrl(ctx: CommandContext): string {
  const { host, port, basePath } = ctx.config
  const h = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host
  return `http://${h.includes(':') ? `[${h}]` : h}:${port}${basePath}/readyz`
}

/**
 * `healthcheck [--url U]`: asks the server's /readyz (or U), exits 0 when it answers 200, 1
 * otherwise with the reason it gave. For container health checks, without curl in the image.
 */
export async function healthcheckCommand(ctx: CommandContext): Promise<number> {
  const raw = typeof ctx.flags.url === 'string' ? ctx.flags.url : defaultHealthUrl(ctx)
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new UsageFailure('--url must be an absolute http(s) URL, e.g. http://127.0.0.1:8080/readyz')
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageFailure('--url must be an absolute http(s) URL')
  let res: Response
  try {
    res = await fetch(url, { signal: AbortSignal.timeout(TIMEOUT_MS), redirect: 'manual' })
  } catch (err) {
    const why = (err as Error).name === 'TimeoutError' ? `no answer within ${TIMEOUT_MS / 1000} seconds` : 'it cannot be reached'
    throw new CommandFailure(`${url.origin}${url.pathname}: ${why}`, { cause: err })
  }
  const body = await res.text().catch(() => '')
  let reason = ''
  try {
    const parsed = JSON.parse(body) as { reason?: unknown }
    if (typeof parsed.reason === 'string') reason = parsed.reason.slice(0, 300)
  } catch {}
  if (res.status === 200) {
    ctx.deps.stdout.write(ctx.json ? `${JSON.stringify({ ok: true, status: 200 })}\n` : `ready (${url.pathname} answered 200)\n`)
    return EXIT_OK
  }
  const line = `${url.pathname} answered ${res.status}${reason ? `: ${reason}` : ''}`
  ctx.deps.stderr.write(`envkeep-server: ${line}\n`)
  if (ctx.json) ctx.deps.stdout.write(`${JSON.stringify({ ok: false, status: res.status, error: line })}\n`)
  return EXIT_FAILURE
}

import pino, { type DestinationStream, type Logger } from 'pino'

/**
 * The path of a URL without its query (queries may carry setup tokens, codes or state), and
 * with an invitation link's token (`/invite/<token>`) replaced.
 */
export function pathOnly(url: string | undefined): string {
  if (!url) return ''
  const q = url.indexOf('?')
  const path = q === -1 ? url : url.slice(0, q)
  return path.replace(/\/invite\/[^/]+/, '/invite/[redacted]')
}

interface RequestLike {
  method?: string
  url?: string
  ip?: string
  id?: string
  routeOptions?: { url?: string }
}

interface ReplyLike {
  statusCode?: number
}

/**
 * The server's structured log (pino, JSON lines). It never holds a value,
 * token, password or key: requests are logged by method and path only (no
 * query, no headers, no body), and the credential headers are redacted in
 * case anything logs them anyway.
 */
export function createLogger(level: string, destination: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'envkeep-server' },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: {
        paths: [
          'req.headers.authorization',
          'req.headers.cookie',
          'headers.authorization',
          'headers.cookie',
          'res.headers["set-cookie"]',
          'body',
          'req.body',
          'password',
          'token',
          'key',
        ],
        censor: '[redacted]',
      },
      serializers: {
        req(req: RequestLike) {
          return { method: req.method, path: pathOnly(req.url), remoteAddress: req.ip }
        },
        res(res: ReplyLike) {
          return { statusCode: res.statusCode }
        },
        err: pino.stdSerializers.err,
      },
    },
    destination,
  )
}

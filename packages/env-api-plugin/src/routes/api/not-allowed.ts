import type { FastifyInstance, FastifyRequest } from 'fastify'
import { errors } from '../../errors.js'
import { errorResponses } from '../../schemas/common.js'
import { vaultPhrase } from './context.js'

/** The paths of the API and the methods each accepts (HEAD comes with GET). */
export const API_PATHS: ReadonlyArray<{
  readonly url: string
  readonly allow: readonly string[]
  /** path segments after /api/env; `*` is a parameter */
  readonly shape: readonly string[]
  readonly phrase: (segments: readonly string[]) => string
}> = Object.freeze([
  { url: '/vaults', allow: ['GET', 'HEAD'], shape: ['vaults'], phrase: () => 'using the vault list' },
  {
    url: '/imports/:import',
    allow: ['GET', 'HEAD'],
    shape: ['imports', '*'],
    phrase: () => 'using the status of a push',
  },
  {
    url: '/:vault/:environment',
    allow: ['GET', 'HEAD'],
    shape: ['*', '*'],
    phrase: (s: readonly string[]) => `using an environment of ${vaultPhrase(s[0] ?? '')}`,
  },
  {
    url: '/:vault/:environment/imports',
    allow: ['POST'],
    shape: ['*', '*', 'imports'],
    phrase: (s: readonly string[]) => `using the pushes of ${vaultPhrase(s[0] ?? '')}`,
  },
])

/**
 * The API path a URL (relative to /api/env, query stripped) has the shape
 * of, for methods the router does not know (which land on the 404 handler).
 */
export function matchApiPath(rest: string): { path: (typeof API_PATHS)[number]; segments: string[] } | null {
  const segments = rest.split('/').filter((s, i) => i > 0 || s !== '')
  if (segments.some((s) => s === '')) return null
  for (const path of API_PATHS) {
    if (path.shape.length !== segments.length) continue
    if (path.shape.every((p, i) => p === '*' || p === segments[i])) return { path, segments }
  }
  return null
}

/**
 * 405 method_not_allowed with `Allow` for every other method Fastify knows,
 * on every path. Answered in onRequest, so a body is never read; needs no sign-in.
 */
export function notAllowedRoutes(app: FastifyInstance): void {
  for (const { url, allow, phrase } of API_PATHS) {
    const methods = app.supportedMethods.filter((m) => !allow.includes(m))
    const refuse = async function methodNotAllowed(_request: FastifyRequest): Promise<void> {
      throw errors.methodNotAllowed(allow)
    }
    app.route({
      method: methods,
      url,
      schema: { response: errorResponses },
      config: {
        envkeepAuth: false,
        envkeepPhrase: (r: FastifyRequest) => phrase(Object.values(r.params as Record<string, string>)),
      },
      onRequest: [refuse],
      handler: refuse,
    })
  }
}

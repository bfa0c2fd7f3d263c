import type { FastifyInstance, FastifyRequest, RouteOptions } from 'fastify'
import { errors } from '../../errors.js'
import { errorResponses } from '../../schemas/common.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * What the route's path is, as a noun phrase from its parameters ("the
     * pushes of vault 3f2a9c1e"): the 405 of any other method is "using <it>".
     */
    envkeepResource?: (params: Readonly<Record<string, string>>) => string
  }
}

/** A route of the API as declared (url relative to /api/env), collected when it is registered. */
export interface DeclaredPath {
  readonly url: string
  /** the methods declared for it (HEAD with GET) */
  readonly allow: string[]
  /** the url's segments; `*` is a parameter */
  readonly shape: readonly string[]
  /** parameter names, by segment index */
  readonly params: ReadonlyMap<number, string>
  readonly resource: (params: Readonly<Record<string, string>>) => string
}

/**
 * Collects every route the scope declares (Fastify's onRoute), so the 405
 * answers and the matching of unknown methods are derived from the
 * declarations: there is no second table of paths to keep in step.
 * Call before the routes are registered; read `paths` after.
 */
export function collectDeclaredPaths(app: FastifyInstance, prefix: string): { readonly paths: DeclaredPath[] } {
  const byUrl = new Map<string, DeclaredPath>()
  app.addHook('onRoute', function declaredPath(route: RouteOptions) {
    const resource = route.config?.envkeepResource
    if (!resource) return // the 405 routes themselves, and anything that is not an API path
    const url = route.url.startsWith(prefix) ? route.url.slice(prefix.length) : route.url
    const methods = Array.isArray(route.method) ? route.method : [route.method]
    let path = byUrl.get(url)
    if (!path) {
      const segments = url.split('/').filter((s) => s !== '')
      path = {
        url,
        allow: [],
        shape: segments.map((s) => (s.startsWith(':') ? '*' : s)),
        params: new Map(segments.flatMap((s, i) => (s.startsWith(':') ? [[i, s.slice(1)] as const] : []))),
        resource,
      }
      byUrl.set(url, path)
    }
    for (const m of methods) if (!path.allow.includes(m)) path.allow.push(m)
    if (path.allow.includes('GET') && !path.allow.includes('HEAD')) path.allow.push('HEAD')
  })
  return {
    get paths() {
      return [...byUrl.values()]
    },
  }
}

/** `using <resource>` for a declared path and the segments of a URL of its shape. */
export function resourcePhrase(path: DeclaredPath, segments: readonly string[]): string {
  const params: Record<string, string> = {}
  for (const [i, name] of path.params) params[name] = segments[i] ?? ''
  return `using ${path.resource(params)}`
}

/**
 * The declared path a URL (relative to /api/env, query stripped) has the
 * shape of, for methods the router does not know (which land on the 404 handler).
 */
export function matchDeclaredPath(paths: readonly DeclaredPath[], rest: string): { path: DeclaredPath; segments: string[] } | null {
  const segments = rest.split('/').filter((s, i) => i > 0 || s !== '')
  if (segments.some((s) => s === '')) return null
  // literal segments win over parameters (`/imports/:import` before `/:vault/:environment`)
  const ranked = [...paths].sort((a, b) => b.shape.filter((s) => s !== '*').length - a.shape.filter((s) => s !== '*').length)
  for (const path of ranked) {
    if (path.shape.length !== segments.length) continue
    if (path.shape.every((p, i) => p === '*' || p === segments[i])) return { path, segments }
  }
  return null
}

/**
 * 405 method_not_allowed with `Allow` for every other method Fastify knows,
 * on every declared path. Answered in onRequest, so a body is never read;
 * needs no sign-in.
 */
export function notAllowedRoutes(app: FastifyInstance, paths: readonly DeclaredPath[]): void {
  for (const path of paths) {
    const allow = [...path.allow]
    const methods = app.supportedMethods.filter((m) => !allow.includes(m))
    const refuse = async function methodNotAllowed(_request: FastifyRequest): Promise<void> {
      throw errors.methodNotAllowed(allow)
    }
    app.route({
      method: methods,
      url: path.url,
      schema: { response: errorResponses },
      config: {
        envkeepAuth: false,
        envkeepPhrase: (r: FastifyRequest) => `using ${path.resource(r.params as Record<string, string>)}`,
      },
      onRequest: [refuse],
      handler: refuse,
    })
  }
}

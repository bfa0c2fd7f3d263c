import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { FastifySchemaCompiler } from 'fastify'
import type { TSchema } from 'typebox'
import { Compile } from 'typebox/compile'
import { Value } from 'typebox/value'
import sjson from 'secure-json-parse'
import { wipe } from '../../crypto/wipe.js'
import { API_HEADERS, renderApiError } from '../../error-handler.js'
import { errors, type ApiError } from '../../errors.js'
import { createAuthenticate, requireSignIn } from '../../hooks/authenticate.js'
import { createRateLimitHook } from '../../hooks/rate-limit.js'
import type { ResolvedOptions } from '../../options.js'
import { apiErrorOf } from './context.js'
import { outcomeOf, type ApiOperation } from '../../adapters/observer.js'
import { importsRoutes } from './imports.js'
import { collectDeclaredPaths, matchDeclaredPath, notAllowedRoutes, resourcePhrase } from './not-allowed.js'
import { variablesRoutes } from './variables.js'
import { vaultsRoutes } from './vaults.js'

const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

/**
 * The four routes of `{base_url}/api/env`, with 405 for every other method
 * and 404 JSON for every other path under it. Hooks, in order: the
 * operation phrase, the bearer token, the rate limit (keyed by sign-in or
 * address), then the 401 if the route needs a sign-in.
 */
export async function apiRoutes(app: FastifyInstance, o: { opts: ResolvedOptions }): Promise<void> {
  await app.register(envApiScope, { prefix: `${o.opts.basePath}/api/env`, opts: o.opts })
}

async function envApiScope(api: FastifyInstance, o: { opts: ResolvedOptions }): Promise<void> {
  const opts = o.opts
  const { domain } = opts.core

  if (!api.hasRequestDecorator('signIn')) api.decorateRequest('signIn', null)
  if (!api.hasRequestDecorator('envkeepAuthFailure')) api.decorateRequest('envkeepAuthFailure', null)
  if (!api.hasRequestDecorator('envkeepOperation')) api.decorateRequest('envkeepOperation', null)

  // Bodies are validated as they are (no type coercion); only JSON is parsed.
  api.setValidatorCompiler(apiValidatorCompiler)
  api.removeAllContentTypeParsers()
  api.addContentTypeParser('application/json', { parseAs: 'buffer' }, function parseApiJson(_request, bytes: Buffer, done) {
    if (bytes.length === 0) return done(errors.invalidRequest('the body is empty; it must be a JSON object'), undefined)
    let body: string
    try {
      // bytes that are not UTF-8 would become U+FFFD: refused, so nothing but what was sent is stored (issue 25)
      body = STRICT_UTF8.decode(bytes)
    } catch {
      return done(errors.invalidRequest('the body is not UTF-8 text; nothing was stored (JSON must be sent as UTF-8)'), undefined)
    } finally {
      // the body's bytes (values in plaintext) zeroed and freed once decoded (crypto/wipe.ts)
      wipe(bytes)
    }
    try {
      done(null, sjson.parse(body, undefined, { protoAction: 'error', constructorAction: 'error' }))
    } catch (err) {
      // prototype keys are refused outright (and said so), never stripped: a name would vanish silently
      const proto = err instanceof SyntaxError && /forbidden prototype property/.test(err.message)
      done(
        errors.invalidRequest(proto ? 'the body holds a __proto__ (or constructor.prototype) key, which is never accepted' : 'the body is not valid JSON'),
        undefined,
      )
    }
    return undefined
  })

  const rateLimit = await createRateLimitHook(api, opts)
  // the route's operation phrase (config.envkeepPhrase) is made only when an error is rendered (error-handler.ts)
  api.addHook('onRequest', createAuthenticate(opts))
  api.addHook('onRequest', rateLimit)
  const prefix = `${opts.basePath}/api/env`
  // each route is declared once; the 405 and 404 answers are derived from the declarations
  const declared = collectDeclaredPaths(api, prefix)
  /** 405 for a method the router does not know (PROPFIND…) on an API path, else 404. */
  function unknownPathError(request: FastifyRequest): ApiError {
    const pathname = request.url.split('?')[0] ?? ''
    const m = pathname.startsWith(prefix) ? matchDeclaredPath(declared.paths, pathname.slice(prefix.length)) : null
    if (m) {
      request.envkeepOperation = resourcePhrase(m.path, m.segments)
      return errors.methodNotAllowed(m.path.allow)
    }
    request.envkeepOperation = 'finding a path of the env API'
    return errors.notFound('the path')
  }
  api.addHook('onRequest', async function signInRequired(request: FastifyRequest, reply: FastifyReply) {
    // Unknown paths are answered here, before any body is read; they need no sign-in.
    if (request.is404) throw unknownPathError(request)
    await requireSignIn(request, reply)
  })
  api.addHook('onSend', function apiHeaders(_request, reply, payload, done) {
    reply.headers(API_HEADERS)
    const headers = reply.getHeaders()
    for (const name in headers) {
      if (name.toLowerCase().startsWith('access-control-')) reply.removeHeader(name)
    }
    done(null, payload)
  })

  // method and full route → operation, made once (no string built per request)
  const operations = new Map<string, ApiOperation>([
    [`GET ${prefix}/vaults`, 'list'],
    [`GET ${prefix}/:vault/:environment`, 'read'],
    [`POST ${prefix}/:vault/:environment/imports`, 'push'],
    [`GET ${prefix}/imports/:import`, 'push_status'],
  ])
  const operationOf = new Map<string, Map<string, ApiOperation>>()
  for (const [key, op] of operations) {
    const [method, url] = key.split(' ') as [string, string]
    const byMethod = operationOf.get(url) ?? new Map<string, ApiOperation>()
    byMethod.set(method, op)
    operationOf.set(url, byMethod)
  }
  api.addHook('onResponse', function observeOperation(request, reply, done) {
    const route = request.routeOptions.url
    const op = route === undefined ? undefined : operationOf.get(route)?.get(request.method)
    opts.observer.apiOperation(op ?? 'other', outcomeOf(reply.statusCode))
    done()
  })

  api.setErrorHandler(function envApiErrors(err, request, reply) {
    return renderApiError(apiErrorOf(err), request, reply)
  })
  api.setNotFoundHandler(async function unknownPath(request: FastifyRequest) {
    throw unknownPathError(request) // reached only if the onRequest answer was skipped
  })

  vaultsRoutes(api, domain)
  variablesRoutes(api, domain)
  importsRoutes(api, opts, domain)
  notAllowedRoutes(api, declared.paths)
}

/**
 * TypeBox's validator as @fastify/type-provider-typebox's `TypeBoxValidatorCompiler` does it
 * (bodies checked as they are; parameters, query strings and headers converted, then
 * checked), with the schema compiled once and `Value.Convert` run only for what does not
 * match already: it ran on every request before (a sixth of the read's own work, on path
 * parameters that are strings already).
 */
const apiValidatorCompiler: FastifySchemaCompiler<TSchema> = ({ schema, httpPart }) => {
  const check = Compile(schema)
  return (value: unknown) => {
    if (check.Check(value)) return { value }
    const converted = httpPart === 'body' ? value : Value.Convert(schema, value)
    return check.Check(converted) ? { value: converted } : { error: check.Errors(converted) }
  }
}

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { SignInRecord } from '../adapters/oauth-store.js'
import { ApiError } from '../errors.js'
import { classifyFailure } from '../failure-class.js'
import { logFailure } from '../failure-log.js'
import { liveSignInOf } from '../hooks/authenticate.js'
import { createRateLimitHook } from '../hooks/rate-limit.js'
import { PUSH_BODY_LIMIT, type ResolvedOptions } from '../options.js'
import { mcpClientsOf } from './clients.js'
import { MCP_READ } from './scopes.js'
import type { ToolCaller } from './tools.js'
import { loadOnce } from '../load-once.js'

type McpHandler = ReturnType<typeof import('@modelcontextprotocol/server').createMcpHandler>

/** JSON-RPC methods the endpoint answers (the SDK's own handshake, discovery and the tools). */
const KNOWN_METHODS = new Set(['initialize', 'ping', 'tools/list', 'tools/call', 'server/discover'])
/** Protocol versions served: 2025-06-18 and 2025-11-25 (stateless), 2026-07-28. */
export const MCP_PROTOCOL_VERSIONS: readonly string[] = Object.freeze(['2025-06-18', '2025-11-25', '2026-07-28'])

/** A failure of the endpoint itself, answered as JSON-RPC with `data: {what, where, why, ref}`. */
export class McpEndpointError extends Error {
  readonly status: number
  readonly rpcCode: number
  readonly why: string
  readonly headers: Readonly<Record<string, string>>
  /** for the log only */
  readonly detail: string | undefined

  constructor(status: number, rpcCode: number, why: string, headers: Readonly<Record<string, string>> = {}, detail?: string) {
    super(why)
    this.name = 'McpEndpointError'
    this.status = status
    this.rpcCode = rpcCode
    this.why = why
    this.headers = headers
    this.detail = detail
  }
}

const endpointError = {
  parse: () => new McpEndpointError(400, -32700, 'the body is not valid JSON'),
  invalid: (why: string) => new McpEndpointError(400, -32600, why),
  unknownMethod: () => new McpEndpointError(404, -32601, 'the method is not one this endpoint serves (initialize, ping, tools/list, tools/call)'),
  tooLarge: () => new McpEndpointError(413, -32600, `the body is larger than ${PUSH_BODY_LIMIT} bytes`),
  mediaType: () => new McpEndpointError(415, -32600, 'the body must be application/json'),
  origin: () => new McpEndpointError(403, -32600, 'the request comes from a web page of another origin'),
  version: () => new McpEndpointError(400, -32600, `the MCP-Protocol-Version is not one this endpoint serves (${MCP_PROTOCOL_VERSIONS.join(', ')})`),
  method: () => new McpEndpointError(405, -32600, 'this stateless endpoint answers only POST', { allow: 'POST' }),
}

declare module 'fastify' {
  interface FastifyRequest {
    /** the MCP client's name, set with the sign-in by the endpoint's bearer check */
    mcpClientName: string | null
  }
}

/**
 * `{baseUrl}/mcp`: Streamable HTTP, stateless, through the official SDK's
 * `createMcpHandler` (2026-07-28 requests, and 2025-06-18/2025-11-25 ones
 * through its stateless legacy leg). Hooks, in order: Origin, bearer token
 * (an MCP sign-in for this resource only: CLI and CI tokens are refused),
 * the per-sign-in rate limit, then the body; then the reply is hijacked and
 * the web-standard request handed to the SDK. A session id never
 * authenticates anything: every request carries its bearer token.
 */
export async function mcpRoutes(app: FastifyInstance, { opts }: { opts: ResolvedOptions }): Promise<void> {
  const mcp = opts.mcp
  if (!mcp) return
  const clients = mcpClientsOf(opts)
  const { domain } = opts.core // the plugin's one core, as the API and the pages

  const ownOrigin = new URL(opts.baseUrl).origin
  const unauthorized = (): McpEndpointError =>
    new McpEndpointError(401, -32001, 'the request has no valid access token for the MCP endpoint', {
      'www-authenticate': `Bearer realm="${opts.serviceName}", resource_metadata="${mcp.resourceMetadataUrl}"`,
    })

  if (!app.hasRequestDecorator('signIn')) app.decorateRequest('signIn', null)
  if (!app.hasRequestDecorator('envkeepAuthFailure')) app.decorateRequest('envkeepAuthFailure', null)
  app.decorateRequest('mcpClientName', null)

  /** A live sign-in bound to this resource (RFC 8707): the CLI's and CI's tokens are for /api/env. */
  async function resolve(request: FastifyRequest): Promise<SignInRecord | null> {
    const s = await liveSignInOf(request, opts)
    if (!s || s.resource !== mcp?.resource || s.clientId === opts.cliClientId || !s.scopes.includes(MCP_READ)) return null
    return s
  }

  const rateLimit = await createRateLimitHook(app, opts)
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: PUSH_BODY_LIMIT }, (_request, body: string, done) => {
    try {
      done(null, JSON.parse(body))
    } catch {
      done(endpointError.parse(), undefined)
    }
  })
  app.addContentTypeParser('*', { parseAs: 'string', bodyLimit: PUSH_BODY_LIMIT }, (_request, _body, done) => done(endpointError.mediaType(), undefined))

  app.addHook('onRequest', async function mcpOrigin(request: FastifyRequest) {
    const origin = request.headers.origin
    if (origin !== undefined && origin !== ownOrigin) throw endpointError.origin()
  })
  app.addHook('onRequest', async function mcpBearer(request: FastifyRequest) {
    request.signIn = await resolve(request)
  })
  app.addHook('onRequest', rateLimit)
  app.addHook('onRequest', async function mcpSignInRequired(request: FastifyRequest) {
    if (!request.signIn) throw unauthorized()
    request.mcpClientName = (await clients.nameOf(request.signIn.clientId)) ?? new URL(request.signIn.clientId, opts.baseUrl).host
    const version = request.headers['mcp-protocol-version']
    if (version !== undefined && (typeof version !== 'string' || !MCP_PROTOCOL_VERSIONS.includes(version))) throw endpointError.version()
  })

  app.setErrorHandler(function mcpErrors(err: unknown, request: FastifyRequest, reply: FastifyReply) {
    return sendEndpointError(err, request, reply)
  })

  // The MCP SDK, zod and the tools are loaded at the first MCP request, not at start: a server
  // that is never asked over MCP does not hold them (about 10 MB of its memory, issue 20)
  const mcpHandler = loadOnce(async (): Promise<McpHandler> => {
    const [{ createMcpHandler }, { createMcpServer }] = await Promise.all([import('@modelcontextprotocol/server'), import('./tools.js')])
    return createMcpHandler(
      (ctx) => {
        const caller = ctx.authInfo?.extra?.['caller'] as ToolCaller | undefined
        if (!caller) throw new Error('envkeep: MCP request without its caller')
        return createMcpServer(opts, domain, caller)
      },
      { legacy: 'stateless', responseMode: 'auto', maxRequestBodySize: PUSH_BODY_LIMIT },
    )
  })
  app.addHook('onClose', async () => {
    await (await mcpHandler.current?.catch(() => null))?.close()
  })

  app.post(mcp.path, async function mcpRequest(request: FastifyRequest, reply: FastifyReply) {
    const body = request.body
    for (const m of Array.isArray(body) ? body : [body]) {
      if (!m || typeof m !== 'object') throw endpointError.invalid('the body is not a JSON-RPC message')
      const method = (m as { method?: unknown }).method
      if (typeof method === 'string' && !method.startsWith('notifications/') && !KNOWN_METHODS.has(method)) throw endpointError.unknownMethod()
    }
    const signIn = request.signIn as SignInRecord
    const caller: ToolCaller = { signIn, clientName: request.mcpClientName ?? 'an MCP client', address: request.ip ?? null, log: request.log }
    const headers = new Headers()
    for (const [k, v] of Object.entries(request.headers)) {
      if (k === 'authorization' || k === 'cookie' || v === undefined) continue
      headers.set(k, Array.isArray(v) ? v.join(', ') : v)
    }
    const web = new Request(`${opts.baseUrl}/mcp`, { method: 'POST', headers, body: JSON.stringify(body) })
    const handler = await mcpHandler()
    const answer = await handler.fetch(web, {
      parsedBody: body,
      authInfo: {
        token: 'redacted',
        clientId: signIn.clientId,
        scopes: [...signIn.scopes],
        resource: new URL(mcp?.resource ?? opts.baseUrl),
        extra: { caller },
      },
    })
    if (answer.status >= 400) return sendSdkRefusal(answer, request, reply)
    reply.hijack()
    const out: Record<string, string> = { 'cache-control': 'no-store, private' }
    answer.headers.forEach((v, k) => {
      if (!k.startsWith('access-control-')) out[k] = v
    })
    reply.raw.writeHead(answer.status, out)
    if (answer.body) {
      for await (const chunk of answer.body as unknown as AsyncIterable<Uint8Array>) reply.raw.write(chunk)
    }
    reply.raw.end()
  })

  app.route({
    method: ['GET', 'DELETE', 'PUT', 'PATCH'],
    url: mcp.path,
    handler: async function mcpMethodNotAllowed() {
      throw endpointError.method()
    },
  })
}

/**
 * A refusal the SDK itself made (a malformed 2026-07-28 envelope, an unsupported
 * version…): the same status and JSON-RPC code, its message as `why`, and our
 * `data: {what, where, why, ref}` with the ref in the log.
 */
async function sendSdkRefusal(answer: Response, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  let code = -32600
  let why = `the MCP request was refused (HTTP ${answer.status})`
  let detail: string | undefined
  let id: string | number | null = idOf(request.body)
  try {
    const body = JSON.parse(await answer.text()) as { id?: unknown; error?: { code?: unknown; message?: unknown } }
    if (typeof body.error?.code === 'number') code = body.error.code
    // the SDK's words may quote what the client sent: they go to the log only
    if (typeof body.error?.message === 'string') detail = body.error.message.replace(/[\r\n]+/g, ' ').slice(0, 300)
    if (answer.status === 400) why = 'the request is not a valid MCP message for the protocol revision it names'
    if (typeof body.id === 'string' || typeof body.id === 'number') id = body.id
  } catch {
    // not JSON: keep the generic reason
  }
  const headers: Record<string, string> = {}
  const allow = answer.headers.get('allow')
  if (allow) headers['allow'] = allow
  return sendEndpointError(new McpEndpointError(answer.status, code, why, headers, detail), request, reply, id)
}

/** Renders an endpoint failure as JSON-RPC `{error: {code, message, data: {what, where, why, ref}}}` with the spec's status, logged under its ref. */
function sendEndpointError(err: unknown, request: FastifyRequest, reply: FastifyReply, id: string | number | null = idOf(request.body)): FastifyReply {
  let e: McpEndpointError
  if (err instanceof McpEndpointError) e = err
  else if (err instanceof ApiError && err.status === 429) e = new McpEndpointError(429, -32000, err.reason, err.headers)
  else {
    const c = classifyFailure(err)
    if (c.kind === 'client') e = c.problem === 'too_large' ? endpointError.tooLarge() : endpointError.parse()
    else e = new McpEndpointError(500, -32603, 'an internal error occurred; quote the reference in a report')
  }
  const where = 'MCP server'
  const ref = logFailure(request, 'MCP request', {
    status: e.status,
    error: String(e.rpcCode),
    where,
    reason: e.why,
    cause: err,
    ...(e.detail === undefined ? {} : { detail: e.detail }),
  })
  const what = 'answering an MCP request'
  return reply
    .code(e.status)
    .headers({ ...e.headers, 'cache-control': 'no-store, private' })
    .type('application/json')
    .send({ jsonrpc: '2.0', id, error: { code: e.rpcCode, message: e.why, data: { what, where, why: e.why, ref } } })
}

function idOf(body: unknown): string | number | null {
  const id = body && typeof body === 'object' && !Array.isArray(body) ? (body as { id?: unknown }).id : null
  return typeof id === 'string' || typeof id === 'number' ? id : null
}

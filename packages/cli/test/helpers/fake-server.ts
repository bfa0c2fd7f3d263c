import { createHash, randomBytes, randomUUID } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

/**
 * A small stand-in for an envkeep server on 127.0.0.1, speaking the spec's
 * OAuth and API surface, for the client's unit tests. Integration tests use
 * the real plugin instead.
 */
export interface FakeServer {
  readonly baseUrl: string
  readonly calls: { refresh: number; reuse: number; revoke: number; api: number; authorize: number }
  readonly variables: Map<string, Record<string, string>>
  /** Vault listing. */
  vaults: Array<{ id: string; name: string; role: string; environments: string[] }>
  /** The next N API answers are 429 with this Retry-After. */
  rateLimit(times: number, retryAfter: number): void
  /** Every access token stops working (as after an hour). */
  expireAccessTokens(): void
  /** Auto-consent on /oauth/authorize: `deny` answers access_denied; `iss` overrides the issuer sent back. */
  consent: { deny: boolean; iss: string | null; grantPush: boolean }
  imports: Map<string, { status: string; names: string[]; refused: unknown[]; polls: number; decideAfter: number; outcome: string }>
  close(): Promise<void>
}

function sha(s: string): string {
  return createHash('sha256').update(s).digest('base64url')
}

async function body(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  for await (const c of req) chunks.push(c as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}

export async function startFakeServer(): Promise<FakeServer> {
  let baseUrl = ''
  const calls = { refresh: 0, reuse: 0, revoke: 0, api: 0, authorize: 0 }
  const codes = new Map<string, { challenge: string; redirect: string; scope: string }>()
  const access = new Map<string, { scope: string; grant: string }>()
  const refresh = new Map<string, { scope: string; grant: string; used: boolean }>()
  const revokedGrants = new Set<string>()
  const variables = new Map<string, Record<string, string>>()
  const imports: FakeServer['imports'] = new Map()
  let limited = 0
  let retryAfter = 0

  function issue(scope: string, grant: string) {
    const at = `ekat_${randomBytes(32).toString('base64url')}`
    const rt = `ekrt_${randomBytes(32).toString('base64url')}`
    access.set(at, { scope, grant })
    refresh.set(rt, { scope, grant, used: false })
    return { access_token: at, refresh_token: rt, token_type: 'Bearer', expires_in: 3600, scope }
  }

  const send = (res: ServerResponse, status: number, obj: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store, private', ...headers }).end(JSON.stringify(obj))
  }
  const apiError = (res: ServerResponse, status: number, error: string, message: string, headers: Record<string, string> = {}) =>
    send(res, status, { error, message, where: 'env API', ref: 'REF1234567' }, headers)
  const oauthError = (res: ServerResponse, status: number, error: string, description: string) =>
    send(res, status, { error, error_description: description, where: 'OAuth', ref: 'OAUTHREF01' })

  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', baseUrl)
    const p = url.pathname
    if (p === '/.well-known/oauth-authorization-server') {
      return send(res, 200, {
        issuer: baseUrl,
        authorization_endpoint: `${baseUrl}/oauth/authorize`,
        token_endpoint: `${baseUrl}/oauth/token`,
        revocation_endpoint: `${baseUrl}/oauth/revoke`,
        response_types_supported: ['code'],
        code_challenge_methods_supported: ['S256'],
        authorization_response_iss_parameter_supported: true,
        scopes_supported: ['env:read', 'env:push'],
      })
    }
    if (p === '/oauth/authorize') {
      calls.authorize++
      const q = url.searchParams
      const redirect = new URL(q.get('redirect_uri')!)
      if (
        q.get('code_challenge_method') !== 'S256' ||
        q.get('resource') !== `${baseUrl}/api/env` ||
        q.get('client_id') !== `${baseUrl}/cli/oauth-client.json`
      ) {
        res.writeHead(400).end('bad authorize request')
        return
      }
      if (fake.consent.deny) {
        redirect.searchParams.set('error', 'access_denied')
      } else {
        const code = randomBytes(16).toString('hex')
        const wanted = q.get('scope')!.split(' ')
        const scope = wanted.filter((s) => s !== 'env:push' || fake.consent.grantPush).join(' ')
        codes.set(code, { challenge: q.get('code_challenge')!, redirect: redirect.href, scope })
        redirect.searchParams.set('code', code)
      }
      redirect.searchParams.set('state', q.get('state')!)
      redirect.searchParams.set('iss', fake.consent.iss ?? baseUrl)
      res.writeHead(302, { location: redirect.href }).end()
      return
    }
    if (p === '/oauth/token' && req.method === 'POST') {
      const f = new URLSearchParams(await body(req))
      if (f.get('resource') !== `${baseUrl}/api/env`) return oauthError(res, 400, 'invalid_target', 'wrong resource')
      if (f.get('grant_type') === 'authorization_code') {
        const c = codes.get(f.get('code') ?? '')
        codes.delete(f.get('code') ?? '')
        if (!c || c.redirect !== f.get('redirect_uri') || sha(f.get('code_verifier') ?? '') !== c.challenge) {
          return oauthError(res, 400, 'invalid_grant', 'bad code')
        }
        return send(res, 200, issue(c.scope, randomUUID()))
      }
      if (f.get('grant_type') === 'refresh_token') {
        calls.refresh++
        const r = refresh.get(f.get('refresh_token') ?? '')
        if (!r || revokedGrants.has(r.grant)) return oauthError(res, 400, 'invalid_grant', 'the sign-in has ended')
        if (r.used) {
          calls.reuse++
          revokedGrants.add(r.grant)
          return oauthError(res, 400, 'invalid_grant', 'refresh token reused; the sign-in has ended')
        }
        r.used = true
        return send(res, 200, issue(r.scope, r.grant))
      }
      return oauthError(res, 400, 'unsupported_grant_type', 'no')
    }
    if (p === '/oauth/revoke' && req.method === 'POST') {
      calls.revoke++
      const f = new URLSearchParams(await body(req))
      const tok = f.get('token') ?? ''
      const g = access.get(tok)?.grant ?? refresh.get(tok)?.grant
      if (g) revokedGrants.add(g)
      res.writeHead(200).end()
      return
    }
    if (p.startsWith('/api/env/')) {
      calls.api++
      const auth = req.headers.authorization ?? ''
      const a = access.get(auth.replace(/^Bearer /i, ''))
      if (!a || revokedGrants.has(a.grant)) {
        return send(
          res,
          401,
          { error: 'invalid_token', message: 'invalid token', where: 'env API', ref: 'REF401XXXX' },
          {
            'www-authenticate': `Bearer realm="envkeep", resource_metadata="${baseUrl}/.well-known/oauth-protected-resource/api/env"`,
          },
        )
      }
      if (limited > 0) {
        limited--
        return apiError(res, 429, 'rate_limited', 'too many requests', { 'retry-after': String(retryAfter) })
      }
      const parts = p.split('/').slice(3).map(decodeURIComponent)
      if (parts[0] === 'vaults' && parts.length === 1) return send(res, 200, { vaults: fake.vaults })
      if (parts[0] === 'imports' && parts.length === 2) {
        const im = imports.get(parts[1]!)
        if (!im) return apiError(res, 404, 'not_found', 'reading push: not found')
        im.polls++
        if (im.status === 'pending' && im.polls > im.decideAfter) im.status = im.outcome
        return send(res, 200, {
          import: parts[1],
          status: im.status,
          environments: ['development'],
          names: im.names,
          expires_at: '2026-11-29T00:00:00.000Z',
          decided_at: im.status === 'pending' ? null : '2026-11-22T01:00:00.000Z',
        })
      }
      const [vault, env, sub] = parts as [string, string, string | undefined]
      const key = `${vault}/${env}`
      if (!fake.vaults.some((v) => v.id === vault)) return apiError(res, 404, 'not_found', `reading ${env} of vault ${vault.slice(0, 8)}: not found`)
      if (sub === undefined && req.method === 'GET') {
        const vars = variables.get(key)
        if (!vars) return apiError(res, 404, 'not_found', `reading ${env} of vault ${vault.slice(0, 8)}: no such environment`)
        return send(res, 200, { vault, environment: env, variables: vars })
      }
      if (sub === 'imports' && req.method === 'POST') {
        if (!a.scope.split(' ').includes('env:push'))
          return apiError(res, 403, 'push_not_allowed', `pushing to ${env} of vault ${vault.slice(0, 8)}: this sign-in may not push`)
        const b = JSON.parse(await body(req)) as { variables: Record<string, string>; refused?: unknown[] }
        const id = randomUUID()
        const names = Object.keys(b.variables).sort()
        imports.set(id, { status: 'pending', names, refused: b.refused ?? [], polls: 0, decideAfter: 1, outcome: 'applied' })
        const existing = variables.get(key) ?? {}
        return send(res, 201, {
          import: id,
          status: 'pending',
          vault,
          environment: env,
          names,
          overwrites: names.filter((n) => n in existing),
          expires_at: '2026-11-29T00:00:00.000Z',
          url: `${baseUrl}/v/${vault}/variables/imports/${id}`,
        })
      }
      return apiError(res, 405, 'method_not_allowed', 'no')
    }
    res.writeHead(404).end()
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const fake: FakeServer = {
    baseUrl,
    calls,
    variables,
    vaults: [],
    imports,
    consent: { deny: false, iss: null, grantPush: true },
    rateLimit(times, seconds) {
      limited = times
      retryAfter = seconds
    },
    expireAccessTokens() {
      access.clear()
    },
    close: () =>
      new Promise((r) => {
        server.closeAllConnections()
        server.close(() => r())
      }),
  }
  return fake
}

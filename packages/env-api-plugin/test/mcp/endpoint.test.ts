import t from 'tap'
import { mintSignIn } from '../../src/testing/index.js'
import { build, PEOPLE } from '../oauth/helpers.js'
import { buildMcp, connect, consentingProvider, seedVault } from './helpers.js'

const BASE = 'https://envkeep.example'
const INIT = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
}
const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }

async function withMcp(t: Tap) {
  const b = await build(t, { baseUrl: BASE, extra: { mcp: true } })
  const token = async (o: { clientId?: string; resource?: string; scopes?: string[] } = {}) =>
    (
      await mintSignIn(b.storage, {
        baseUrl: BASE,
        personId: PEOPLE.ada!.id,
        now: b.clock.now,
        clientId: o.clientId ?? 'mcp_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
        resource: o.resource ?? `${BASE}/mcp`,
        scopes: o.scopes ?? ['mcp:read'],
      })
    ).accessToken
  const post = (auth: string | null, payload: string | object, headers: Record<string, string> = {}) =>
    b.app.inject({
      method: 'POST',
      url: '/mcp',
      headers: { ...HEADERS, ...(auth ? { authorization: `Bearer ${auth}` } : {}), ...headers },
      payload: typeof payload === 'string' ? payload : JSON.stringify(payload),
    })
  return { b, token, post }
}
type Tap = Parameters<typeof build>[0]

t.test('tokens are bound to their resource, in every direction', async (t) => {
  const { b, token, post } = await withMcp(t)
  const mcp = await token()
  const cli = await token({ clientId: `${BASE}/cli/oauth-client.json`, resource: `${BASE}/api/env`, scopes: ['env:read', 'env:push'] })
  const ciLike = await token({ clientId: `${BASE}/cli/oauth-client.json`, resource: `${BASE}/api/env`, scopes: ['env:read'] })
  const mcpClientApiResource = await token({ resource: `${BASE}/api/env`, scopes: ['env:read'] })
  t.equal((await post(mcp, INIT)).statusCode, 200, 'an MCP token works at /mcp')
  const api = await b.app.inject({ method: 'GET', url: '/api/env/vaults', headers: { authorization: `Bearer ${mcp}` } })
  t.equal(api.statusCode, 401, 'an MCP token gets 401 at /api/env')
  for (const [name, tok] of [
    ['a CLI token', cli],
    ['a CI (token-exchange) token', ciLike],
    ['an MCP client token for /api/env', mcpClientApiResource],
    ['no token', null],
    ['garbage', 'ekat_nope'],
  ] as const) {
    const res = await post(tok, INIT)
    t.equal(res.statusCode, 401, `${name} gets 401 at /mcp`)
    t.equal(res.headers['www-authenticate'], `Bearer realm="envkeep", resource_metadata="${BASE}/.well-known/oauth-protected-resource/mcp"`)
    const body = res.json() as { error: { message: string; data: { what: string; where: string; why: string; ref: string } } }
    t.equal(body.error.data.where, 'MCP server')
    t.ok(
      b.logs.some((l) => l.includes(body.error.data.ref)),
      'its ref is in the log',
    )
  }
  const prm = await b.app.inject({ method: 'GET', url: '/.well-known/oauth-protected-resource/mcp' })
  t.same(prm.json(), {
    resource: `${BASE}/mcp`,
    authorization_servers: [BASE],
    bearer_methods_supported: ['header'],
    scopes_supported: ['mcp:read', 'mcp:propose'],
    resource_name: 'envkeep MCP endpoint (names, never values)',
  })
  const as = (await b.app.inject({ method: 'GET', url: '/.well-known/oauth-authorization-server' })).json() as Record<string, unknown>
  t.equal(as['registration_endpoint'], `${BASE}/oauth/register`)
  t.same(as['protected_resources'], [`${BASE}/api/env`, `${BASE}/mcp`])
})

t.test('a CI identity token (token exchange) is refused at /mcp', async (t) => {
  const { b, post } = await withMcp(t)
  const ci = await mintSignIn(b.storage, { baseUrl: BASE, personId: 'ci:00000000-0000-4000-8000-000000000000', now: b.clock.now, scopes: ['env:read'] })
  t.equal((await post(ci.accessToken, INIT)).statusCode, 401)
})

t.test('endpoint failures are JSON-RPC with data {what, where, why, ref} and the spec status', async (t) => {
  const { b, token, post } = await withMcp(t)
  const tok = await token()
  const cases: [string, Awaited<ReturnType<typeof post>>, number, number][] = [
    ['bad JSON', await post(tok, '{"jsonrpc":'), 400, -32700],
    ['unknown method', await post(tok, { jsonrpc: '2.0', id: 7, method: 'resources/list' }), 404, -32601],
    ['oversize body', await post(tok, { jsonrpc: '2.0', id: 8, method: 'ping', params: { pad: 'x'.repeat(1_100_000) } }), 413, -32600],
    ['another media type', await post(tok, 'a=b', { 'content-type': 'application/x-www-form-urlencoded' }), 415, -32600],
    ['a foreign Origin', await post(tok, INIT, { origin: 'https://evil.example' }), 403, -32600],
    ['an unknown MCP-Protocol-Version', await post(tok, INIT, { 'mcp-protocol-version': '1999-01-01' }), 400, -32600],
    [
      'a 2026-07-28 request the SDK refuses (no client capabilities in its envelope)',
      await post(
        tok,
        { jsonrpc: '2.0', id: 9, method: 'tools/list', params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } } },
        { 'mcp-protocol-version': '2026-07-28' },
      ),
      400,
      -32602,
    ],
  ]
  for (const [name, res, status, code] of cases) {
    t.equal(res.statusCode, status, `${name}: ${status}`)
    const body = res.json() as { jsonrpc: string; error: { code: number; message: string; data: { what: string; where: string; why: string; ref: string } } }
    t.equal(body.jsonrpc, '2.0')
    t.equal(body.error.code, code, `${name}: code ${code}`)
    t.equal(body.error.data.where, 'MCP server')
    t.equal(body.error.message, body.error.data.why)
    t.ok(body.error.data.what.length > 0)
    t.ok(
      b.logs.some((l) => l.includes(body.error.data.ref)),
      `${name}: the ref is in the log`,
    )
    t.equal(res.headers['cache-control'], 'no-store, private')
  }
  t.equal((await post(tok, INIT, { origin: BASE })).statusCode, 200, 'its own origin passes')
  const get = await b.app.inject({ method: 'GET', url: '/mcp', headers: { authorization: `Bearer ${tok}` } })
  t.equal(get.statusCode, 405, 'stateless: GET is 405')
})

t.test('the rate limit is per sign-in, as JSON-RPC 429 with Retry-After', async (t) => {
  const b = await build(t, { baseUrl: BASE, extra: { mcp: true, rateLimit: { perMinute: 2, perDay: 100 } } })
  const tok = (
    await mintSignIn(b.storage, {
      baseUrl: BASE,
      personId: PEOPLE.ada!.id,
      now: b.clock.now,
      clientId: 'mcp_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
      resource: `${BASE}/mcp`,
      scopes: ['mcp:read'],
    })
  ).accessToken
  const send = () => b.app.inject({ method: 'POST', url: '/mcp', headers: { ...HEADERS, authorization: `Bearer ${tok}` }, payload: JSON.stringify(INIT) })
  t.equal((await send()).statusCode, 200)
  t.equal((await send()).statusCode, 200)
  const third = await send()
  t.equal(third.statusCode, 429)
  t.ok(Number(third.headers['retry-after']) >= 1)
  t.match((third.json() as { error: { data: { why: string } } }).error.data.why, /this sign-in made more than 2 requests in a minute/)
})

t.test('off by default: no /mcp, no MCP metadata', async (t) => {
  const b = await build(t, { baseUrl: BASE })
  t.equal((await b.app.inject({ method: 'POST', url: '/mcp', headers: HEADERS, payload: JSON.stringify(INIT) })).statusCode, 404)
  t.equal((await b.app.inject({ method: 'GET', url: '/.well-known/oauth-protected-resource/mcp' })).statusCode, 404)
})

t.test('dynamic registration (RFC 7591): the SDK client registers, signs in without propose, and a viewer-like refusal is a two-line tool error', async (t) => {
  const b = await buildMcp(t)
  await seedVault(b)
  const bad = await fetch(`${b.base}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ redirect_uris: ['javascript:alert(1)'] }),
  })
  t.equal(bad.status, 400)
  t.equal(((await bad.json()) as { error: string }).error, 'invalid_redirect_uri')
  const cursorLike = await fetch(`${b.base}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      client_name: 'Cursor',
      redirect_uris: ['cursor://anysphere.cursor-mcp/oauth/callback', 'https://www.cursor.com/oauth/callback', 'http://localhost:8787/callback'],
    }),
  })
  t.equal(cursorLike.status, 201, "Cursor's three redirect URIs in one request")

  const received: string[] = []
  const pages: string[] = []
  const provider = consentingProvider(b, { redirectUri: 'http://localhost:47012/callback', clientName: 'Local agent', choice: { pages } })
  const { client } = await connect(b, provider, received)
  t.match(pages[0], /known only by a redirect to this computer/, 'the localhost-only warning')
  const info = await provider.clientInformation()
  t.match(info?.client_id, /^mcp_/, 'registered by DCR')
  const refused = (await client.callTool({
    name: 'propose_push',
    arguments: { vault: 'shop', environment: 'development', variables: { A: 'CANARY-dcr' } },
  })) as {
    isError?: boolean
    content: { text: string }[]
  }
  t.equal(refused.isError, true, 'no propose scope: refused')
  t.equal(refused.content[0]?.text.split('\n').length, 2)
  t.match(refused.content[0]?.text, /^Proposing a push failed: this connection was not allowed to propose changes/)
  t.notOk(received.join('').includes('CANARY-dcr'))
  t.notOk(b.logs.join('').includes('CANARY-dcr'))

  // the sign-in is on the Sign-ins page with the client's name
  const page = await fetch(`${b.base}/sign-ins`, { headers: { cookie: `test_person=${PEOPLE.ada!.id}` } })
  t.match(await page.text(), /Local agent \(MCP\)/)
  await client.close()
})

t.test('an editor never touches owners-only environments; refresh rotates and reuse revokes', async (t) => {
  const b = await buildMcp(t)
  await seedVault(b)
  const received: string[] = []
  const provider = consentingProvider(b, {
    redirectUri: 'http://127.0.0.1:47013/callback',
    clientName: 'Bob agent',
    scope: 'mcp:read mcp:propose',
    choice: { person: PEOPLE.bob!.id, allowPropose: true },
  })
  const { client } = await connect(b, provider, received)
  for (const [tool, args] of [
    ['list_variables', { vault: 'shop', environment: 'production' }],
    ['propose_push', { vault: 'shop', environment: 'production', variables: { A: 'x' } }],
    ['recent_changes', { vault: 'shop', environment: 'production' }],
  ] as const) {
    const r = (await client.callTool({ name: tool, arguments: args })) as { isError?: boolean; content: { text: string }[] }
    t.equal(r.isError, true, `${tool} on production refused`)
    t.match(r.content[0]?.text, /owners-only/)
  }
  const tokens = await provider.tokens()
  const refresh = (rt: string) =>
    fetch(`${b.base}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'refresh_token',
        refresh_token: rt,
        client_id: String((provider.clientInformation() as { client_id: string }).client_id),
        resource: `${b.base}/mcp`,
      }),
    })
  const first = await refresh(String(tokens?.refresh_token))
  t.equal(first.status, 200, 'refresh works for the MCP resource')
  const again = await refresh(String(tokens?.refresh_token))
  t.equal(again.status, 400, 'reusing a refresh token is refused')
  const fresh = ((await first.json()) as { access_token: string }).access_token
  const after = await fetch(`${b.base}/mcp`, { method: 'POST', headers: { ...HEADERS, authorization: `Bearer ${fresh}` }, body: JSON.stringify(INIT) })
  t.equal(after.status, 401, 'and it revoked the whole sign-in')
  await client.close()
})

t.test('a base URL with a path: the endpoint and its metadata follow it (RFC 9728 path-inserted)', async (t) => {
  const base = 'https://example.com/envkeep'
  const b = await build(t, { baseUrl: base, extra: { mcp: true } })
  const prm = await b.app.inject({ method: 'GET', url: '/.well-known/oauth-protected-resource/envkeep/mcp' })
  t.equal(prm.statusCode, 200)
  t.equal((prm.json() as { resource: string }).resource, `${base}/mcp`)
  const res = await b.app.inject({ method: 'POST', url: '/envkeep/mcp', headers: HEADERS, payload: JSON.stringify(INIT) })
  t.equal(res.statusCode, 401)
  t.equal(res.headers['www-authenticate'], `Bearer realm="envkeep", resource_metadata="https://example.com/.well-known/oauth-protected-resource/envkeep/mcp"`)
  const as = (await b.app.inject({ method: 'GET', url: '/.well-known/oauth-authorization-server/envkeep' })).json() as Record<string, unknown>
  t.equal(as['registration_endpoint'], `${base}/oauth/register`)
  t.equal(
    (
      await b.app.inject({
        method: 'POST',
        url: '/envkeep/oauth/register',
        headers: { 'content-type': 'application/json' },
        payload: JSON.stringify({ redirect_uris: ['http://127.0.0.1/cb'] }),
      })
    ).statusCode,
    201,
  )
})

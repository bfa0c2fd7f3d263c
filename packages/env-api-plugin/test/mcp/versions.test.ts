import t from 'tap'
import { mintSignIn } from '../../src/testing/index.js'
import { PEOPLE } from '../oauth/helpers.js'
import { buildMcp, connect, consentingProvider, seedVault } from './helpers.js'

/** The one JSON-RPC message of a stateless answer: plain JSON, or the data line of its SSE event. */
function sse(text: string): unknown {
  const data = text.split('\n').find((l) => l.startsWith('data: '))
  return JSON.parse(data ? data.slice(6) : text)
}

const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }

t.test('protocol versions 2025-06-18 and 2025-11-25 (initialize) are answered in their own version', async (t) => {
  const b = await buildMcp(t)
  const token = (
    await mintSignIn(b.storage, {
      baseUrl: b.base,
      personId: PEOPLE.ada!.id,
      now: b.clock.now,
      clientId: 'mcp_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
      resource: `${b.base}/mcp`,
      scopes: ['mcp:read'],
    })
  ).accessToken
  for (const version of ['2025-06-18', '2025-11-25']) {
    const init = await fetch(`${b.base}/mcp`, {
      method: 'POST',
      headers: { ...HEADERS, authorization: `Bearer ${token}` },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
      }),
    })
    t.equal(init.status, 200)
    const body = sse(await init.text()) as { result: { protocolVersion: string; capabilities: Record<string, unknown> } }
    t.equal(body.result.protocolVersion, version, `${version} negotiated`)
    t.ok(body.result.capabilities['tools'], 'tools offered')
    t.equal(init.headers.get('mcp-session-id'), null, 'stateless: no session id')
    const list = await fetch(`${b.base}/mcp`, {
      method: 'POST',
      headers: { ...HEADERS, authorization: `Bearer ${token}`, 'mcp-protocol-version': version },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
    })
    t.equal(list.status, 200)
    t.equal((sse(await list.text()) as { result: { tools: unknown[] } }).result.tools.length, 6)
  }
  // a session id is never authentication
  const noToken = await fetch(`${b.base}/mcp`, {
    method: 'POST',
    headers: { ...HEADERS, 'mcp-session-id': 'anything', 'mcp-protocol-version': '2025-11-25' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/list' }),
  })
  t.equal(noToken.status, 401)
})

t.test('protocol version 2026-07-28: the SDK client pinned to it lists and calls tools', async (t) => {
  const b = await buildMcp(t)
  await seedVault(b)
  const provider = consentingProvider(b, { redirectUri: 'http://127.0.0.1:47021/callback', clientName: 'Modern' })
  const { client } = await connect(b, provider, [], { versionNegotiation: { mode: { pin: '2026-07-28' } } })
  t.equal(client.getNegotiatedProtocolVersion(), '2026-07-28')
  t.equal((await client.listTools()).tools.length, 6)
  const r = (await client.callTool({ name: 'list_vaults', arguments: {} })) as { isError?: boolean; content: { text: string }[] }
  t.notOk(r.isError)
  t.match(r.content[0]?.text, /"name": "shop"/)
  await client.close()
})

t.test('a plan limit over MCP starts "Limit reached:" and names the vault, limit, plan and usage; a viewer cannot propose', async (t) => {
  const b = await buildMcp(t, { plans: { 'self-hosted': { maxVariables: 2, maxBytes: 1_000_000 } } })
  const vaultId = await seedVault(b)
  await b.storage.changeMember(
    { kind: 'set', vaultId, personId: PEOPLE.bob!.id, role: 'viewer' },
    {
      vaultId,
      at: b.clock.now,
      personId: null,
      signInId: null,
      clientId: 'test',
      address: null,
      action: 'member_changed',
      environment: null,
      names: [],
      subject: PEOPLE.bob!.id,
      detail: 'viewer',
    },
  )
  const provider = consentingProvider(b, { redirectUri: 'http://127.0.0.1:47022/callback', scope: 'mcp:read mcp:propose', choice: { allowPropose: true } })
  const { client } = await connect(b, provider, [])
  const many = Object.fromEntries(Array.from({ length: 3 }, (_, i) => [`V${i}`, 'x']))
  t.teardown(() => client.close())
  // the plan allows 2 variables: a push of 3 is refused
  const r = (await client.callTool({ name: 'propose_push', arguments: { vault: 'shop', environment: 'development', variables: many } })) as {
    isError?: boolean
    content: { text: string }[]
  }
  t.equal(r.isError, true)
  const [first, second] = (r.content[0]?.text ?? '').split('\n')
  t.match(
    first,
    new RegExp(`^Limit reached: vault ${vaultId.slice(0, 8)} is at its storage limit of 2 variables on plan self-hosted; with this push it would use 3`),
  )
  t.match(second, /where: MCP tool propose_push: plan limit; code: plan_limit; ref: [A-Z0-9]+$/)
  t.ok(
    b.logs.some((l) => l.includes(/ref: ([A-Z0-9]+)/.exec(second ?? '')?.[1] ?? 'none')),
    'its ref is in the log',
  )
  const viewer = consentingProvider(b, {
    redirectUri: 'http://127.0.0.1:47023/callback',
    scope: 'mcp:read mcp:propose',
    choice: { person: PEOPLE.bob!.id, allowPropose: true },
  })
  const v = await connect(b, viewer, [])
  t.teardown(() => v.client.close())
  const listed = (await v.client.callTool({ name: 'list_variables', arguments: { vault: 'shop', environment: 'development' } })) as { isError?: boolean }
  t.notOk(listed.isError, 'a viewer sees names')
  const refused = (await v.client.callTool({ name: 'propose_push', arguments: { vault: 'shop', environment: 'development', variables: { A: 'x' } } })) as {
    isError?: boolean
    content: { text: string }[]
  }
  t.equal(refused.isError, true)
  t.match(refused.content[0]?.text, /your role \(viewer\) cannot push to/)
  t.match(refused.content[0]?.text, /where: MCP tool propose_push: database \(your role\)/)
})

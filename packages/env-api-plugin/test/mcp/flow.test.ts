import t from 'tap'
import type { Client } from '@modelcontextprotocol/client'
import { PEOPLE } from '../oauth/helpers.js'
import { applyOnReviewPage, buildMcp, connect, consentingProvider, seedVault, serveClientDocument } from './helpers.js'

const CANARY = 'CANARY-7f3a9c1e-value-never-shown'

type ToolText = { isError?: boolean; content: { type: string; text: string }[] }
async function call(client: Client, name: string, args: Record<string, unknown>): Promise<ToolText> {
  return (await client.callTool({ name, arguments: args })) as ToolText
}
const json = (r: ToolText): Record<string, unknown> => JSON.parse(r.content[0]?.text ?? 'null') as Record<string, unknown>

t.test('the SDK client signs in by metadata document, runs every tool, a person applies its push, and no value reaches it or the log', async (t) => {
  const b = await buildMcp(t)
  const vaultId = await seedVault(b)
  const redirectUri = 'http://127.0.0.1:47011/callback'
  const doc = await serveClientDocument(t, (url) => ({
    client_id: url,
    client_name: 'Claude Code <i>',
    redirect_uris: [redirectUri],
    token_endpoint_auth_method: 'none',
  }))
  const received: string[] = []
  const pages: string[] = []
  const provider = consentingProvider(b, { clientId: doc.url, redirectUri, scope: 'mcp:read mcp:propose', choice: { allowPropose: true, pages } })

  // discovery from the 401
  const bare = await fetch(`${b.base}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: '{}',
  })
  t.equal(bare.status, 401)
  t.match(bare.headers.get('www-authenticate'), `resource_metadata="${b.base}/.well-known/oauth-protected-resource/mcp"`)
  const prm = (await (await fetch(`${b.base}/.well-known/oauth-protected-resource/mcp`)).json()) as Record<string, unknown>
  t.same(prm['resource'], `${b.base}/mcp`)

  const { client } = await connect(b, provider, received)
  t.ok(doc.fetches() >= 1, 'the server fetched the client metadata document')
  t.match(pages[0], /Claude Code &lt;i&gt;/, 'the consent page names the client, escaped')
  t.match(pages[0], /names, never values/)
  t.match(pages[0], /propose changes/)
  t.match(pages[0], /127\.0\.0\.1:47011/, 'and where the answer goes')

  const tools = await client.listTools()
  t.same(tools.tools.map((x) => x.name).sort(), ['compare_env', 'list_vaults', 'list_variables', 'propose_push', 'push_status', 'recent_changes'].sort())
  for (const tool of tools.tools) {
    t.ok(tool.description && tool.description.length > 40, `${tool.name} is described for a model`)
    t.equal(tool.annotations?.readOnlyHint, tool.name !== 'propose_push', `${tool.name} read-only hint`)
  }

  const vaults = json(await call(client, 'list_vaults', {}))
  t.same(vaults['vaults'], [{ id: vaultId, name: 'shop', role: 'owner', environments: ['development', 'production'] }])

  const proposed = await call(client, 'propose_push', { vault: 'shop', environment: 'development', variables: { API_KEY: CANARY, DB_URL: `${CANARY}-db` } })
  t.notOk(proposed.isError, proposed.content[0]?.text)
  const push = json(proposed)
  t.equal(push['status'], 'pending')
  t.same(push['names'], ['API_KEY', 'DB_URL'])
  const reviewUrl = String(push['review_url'])
  t.equal(reviewUrl, `${b.base}/v/${vaultId}/variables/imports/${push['push']}`)

  t.equal(json(await call(client, 'push_status', { push: push['push'] }))['status'], 'pending')
  t.equal(await applyOnReviewPage(b, reviewUrl, PEOPLE.bob!.id), 303, 'bob applies it on the review page')
  t.equal(json(await call(client, 'push_status', { push: push['push'] }))['status'], 'applied', 'push_status then says applied')

  const listed = json(await call(client, 'list_variables', { vault: vaultId, environment: 'development' }))
  t.same(
    (listed['variables'] as { name: string; updated_by: string }[]).map((v) => [v.name, v.updated_by]),
    [
      ['API_KEY', 'Bob <b>Builder</b>'],
      ['DB_URL', 'Bob <b>Builder</b>'],
    ],
  )
  const compared = json(await call(client, 'compare_env', { vault: 'shop', environment: 'development', names: ['API_KEY', 'NEW_ONE'] }))
  t.same(compared['missing_from_environment'], ['NEW_ONE'])
  t.same(compared['missing_from_file'], ['DB_URL'])
  const changes = json(await call(client, 'recent_changes', { vault: 'shop', environment: 'development' }))
  t.same((changes['changes'] as { how: string; added: string[] }[])[0]?.added, ['API_KEY', 'DB_URL'])

  // a tool failure: two lines, the second with where and ref; the ref is in the log
  const missing = await call(client, 'list_variables', { vault: 'nope', environment: 'development' })
  t.equal(missing.isError, true)
  const lines = (missing.content[0]?.text ?? '').split('\n')
  t.equal(lines.length, 2, 'exactly two lines')
  t.match(lines[1], /where: MCP tool list_variables: database \(only what's shared with you is visible\); ref: [A-Z0-9]+/)
  const ref = /ref: ([A-Z0-9]+)/.exec(lines[1] ?? '')?.[1] ?? 'none'
  t.ok(
    b.logs.some((l) => l.includes(ref)),
    'the ref finds its record in the log',
  )

  // arguments that do not fit: the same two lines, naming the rule, never the value
  for (const [name, args] of [
    ['push_status', { push: CANARY }],
    ['propose_push', { vault: 'shop', environment: 'development', variables: { A: 5, B: CANARY }, extra: CANARY }],
  ] as const) {
    const bad = await call(client, name, args)
    t.equal(bad.isError, true, `${name}: refused`)
    const [first, second] = (bad.content[0]?.text ?? '').split('\n')
    t.match(first, /failed: the arguments do not fit this tool/)
    t.match(second, new RegExp(`where: MCP tool ${name}; ref: [A-Z0-9]+$`))
  }

  // the access log names the client and the names
  const log = await b.storage.listAccessLog(vaultId, { limit: 50 })
  t.ok(log.some((e) => e.action === 'push_created' && e.detail === 'MCP Claude Code <i>' && e.names.join() === 'API_KEY,DB_URL'))
  t.ok(log.some((e) => e.action === 'read' && e.detail?.startsWith('MCP Claude Code <i>: list_variables')))

  // refresh: a new access token works, the old refresh token is reuse
  const before = await provider.tokens()
  await client.close()

  const everything = received.join('\n') + b.logs.join('\n')
  t.ok(everything.includes('review_url') && everything.includes('API_KEY'), 'the scan sees the tool results')
  t.notOk(everything.includes(CANARY), 'no canary in any byte the client received or the server logged')
  t.ok(before?.refresh_token, 'a refresh token was issued')
})

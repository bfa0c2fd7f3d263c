import t from 'tap'
import { randomUUID } from 'node:crypto'
import { startOidcIssuer } from '@envkeep/test-support'
import { testLogEntry } from '../../src/testing/index.js'
import { build, BASE_URL, CLI_CLIENT, RESOURCE } from '../api/helpers.js'

const GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange'
const JWT_TYPE = 'urn:ietf:params:oauth:token-type:jwt'

t.test('a CI identity token, exchanged for real (RFC 8693), is refused at /mcp; and MCP is no way to exchange one', async (t) => {
  const b = await build(t, { extra: { ciAllowHttpLoopbackIssuers: true, mcp: true } })
  b.clock.now = new Date() // the issuer signs with the real clock
  const idp = await startOidcIssuer()
  t.teardown(() => idp.close())
  const vaultId = await b.createVault('owner-1', { name: 'shop' })
  const identityId = randomUUID()
  await b.storage.changeCiIdentity(
    {
      kind: 'create',
      identity: {
        id: identityId,
        vaultId,
        name: 'deploy',
        issuer: idp.issuer,
        audience: BASE_URL,
        subjectPattern: 'repo:acme/shop:*',
        requiredClaims: {},
        role: 'owner',
        environments: ['development'],
        now: b.clock.now,
      },
    },
    testLogEntry({ vaultId, action: 'member_added', subject: `ci:${identityId}`, detail: 'owner' }),
  )
  const exchange = async (extra: Record<string, string>) =>
    b.app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({
        grant_type: GRANT,
        subject_token: await idp.sign({ sub: 'repo:acme/shop:ref:refs/heads/main', aud: BASE_URL, jti: randomUUID() }),
        subject_token_type: JWT_TYPE,
        client_id: CLI_CLIENT,
        resource: RESOURCE,
        ...extra,
      }).toString(),
    })
  const res = await exchange({})
  t.equal(res.statusCode, 200, res.body)
  const token = (res.json() as { access_token: string }).access_token
  t.equal(
    (await b.app.inject({ method: 'GET', url: '/api/env/vaults', headers: { authorization: `Bearer ${token}` } })).statusCode,
    200,
    'it works at /api/env',
  )
  const mcp = await b.app.inject({
    method: 'POST',
    url: '/mcp',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    payload: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  })
  t.equal(mcp.statusCode, 401, 'and gets 401 at /mcp')
  t.match(mcp.headers['www-authenticate'], /resource_metadata="https:\/\/envkeep\.example\/\.well-known\/oauth-protected-resource\/mcp"/)
  const forMcp = await exchange({ resource: `${BASE_URL}/mcp` })
  t.equal((forMcp.json() as { error: string }).error, 'invalid_target', 'no CI token is ever minted for /mcp')
  const byMcpClient = await exchange({ client_id: 'mcp_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', resource: `${BASE_URL}/mcp` })
  t.equal((byMcpClient.json() as { error: string }).error, 'invalid_client', 'nor through an MCP client')
})

import t from 'tap'
import { build } from './helpers.js'

const BASE = 'https://envkeep.example'

t.test('authorization server metadata: exact whitelist, issuer from config even with a forged Host', async (t) => {
  const b = await build(t, { baseUrl: BASE })
  for (const headers of [
    {},
    { host: 'evil.example' },
    { 'x-forwarded-host': 'evil.example', 'mcp-protocol-version': '2025-11-25', accept: 'application/json' },
  ]) {
    const res = await b.app.inject({ method: 'GET', url: '/.well-known/oauth-authorization-server', headers })
    t.equal(res.statusCode, 200)
    t.match(res.headers['content-type'], /^application\/json/)
    t.notOk(res.headers.location, 'no redirect')
    t.same(res.json(), {
      issuer: BASE,
      authorization_endpoint: `${BASE}/oauth/authorize`,
      token_endpoint: `${BASE}/oauth/token`,
      revocation_endpoint: `${BASE}/oauth/revoke`,
      response_types_supported: ['code'],
      response_modes_supported: ['query'],
      grant_types_supported: ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:token-exchange'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['none'],
      revocation_endpoint_auth_methods_supported: ['none'],
      scopes_supported: ['env:read', 'env:push'],
      authorization_response_iss_parameter_supported: true,
      client_id_metadata_document_supported: true,
      protected_resources: [`${BASE}/api/env`],
    })
    t.notOk(res.body.includes('registration_endpoint'), 'no dynamic registration')
    t.notOk(res.body.includes('plain'), 'plain PKCE never listed')
    t.notOk(res.body.includes('evil.example'), 'nothing from the request headers')
  }
  const head = await b.app.inject({ method: 'HEAD', url: '/.well-known/oauth-authorization-server' })
  t.equal(head.statusCode, 200, 'HEAD works')
})

t.test('protected resource metadata at the path-inserted URL; nothing at the root', async (t) => {
  const b = await build(t, { baseUrl: BASE })
  const res = await b.app.inject({ method: 'GET', url: '/.well-known/oauth-protected-resource/api/env', headers: { host: 'evil.example' } })
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /^application\/json/)
  t.same(res.json(), {
    resource: `${BASE}/api/env`,
    authorization_servers: [BASE],
    bearer_methods_supported: ['header'],
    scopes_supported: ['env:read', 'env:push'],
    resource_name: 'envkeep environment variables API',
  })
  const root = await b.app.inject({ method: 'GET', url: '/.well-known/oauth-protected-resource' })
  t.equal(root.statusCode, 404, 'the root PRM does not impersonate /api/env')
  const slash = await b.app.inject({ method: 'GET', url: '/.well-known/oauth-protected-resource/' })
  t.not(slash.statusCode, 200)
})

t.test('the CLI client metadata document', async (t) => {
  const b = await build(t, { baseUrl: BASE })
  const res = await b.app.inject({ method: 'GET', url: '/cli/oauth-client.json', headers: { host: 'evil.example' } })
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /^application\/json/)
  t.match(res.headers['cache-control'], /max-age=\d+/)
  const doc = res.json() as Record<string, unknown>
  t.equal(doc.client_id, `${BASE}/cli/oauth-client.json`, 'client_id is the document URL, as a string')
  t.equal(doc.client_name, 'envkeep command-line client')
  t.same(doc.redirect_uris, ['http://127.0.0.1/callback', 'http://[::1]/callback'])
  t.same(doc.grant_types, ['authorization_code', 'refresh_token'])
  t.same(doc.response_types, ['code'])
  t.equal(doc.token_endpoint_auth_method, 'none')
  t.equal(doc.application_type, 'native')
  t.notOk('client_secret' in doc)
  t.notOk('client_secret_expires_at' in doc)
})

t.test('with a path in baseUrl, the well-known strings are inserted before it', async (t) => {
  const base = 'https://x.example/envkeep'
  const b = await build(t, { baseUrl: base })
  const as = await b.app.inject({ method: 'GET', url: '/.well-known/oauth-authorization-server/envkeep' })
  t.equal(as.statusCode, 200)
  t.equal(as.json().issuer, base)
  t.equal(as.json().token_endpoint, `${base}/oauth/token`)
  const prm = await b.app.inject({ method: 'GET', url: '/.well-known/oauth-protected-resource/envkeep/api/env' })
  t.equal(prm.statusCode, 200)
  t.equal(prm.json().resource, `${base}/api/env`)
  t.same(prm.json().authorization_servers, [base])
  const cimd = await b.app.inject({ method: 'GET', url: '/envkeep/cli/oauth-client.json' })
  t.equal(cimd.json().client_id, `${base}/cli/oauth-client.json`)
  for (const url of [
    '/.well-known/oauth-authorization-server',
    '/envkeep/.well-known/oauth-authorization-server',
    '/.well-known/oauth-protected-resource/api/env',
  ]) {
    t.equal((await b.app.inject({ method: 'GET', url })).statusCode, 404, `${url} is not served`)
  }
})

t.test('no CORS headers on the OAuth endpoints', async (t) => {
  const b = await build(t, { baseUrl: BASE })
  for (const url of ['/.well-known/oauth-authorization-server', '/oauth/authorize', '/cli/oauth-client.json']) {
    const res = await b.app.inject({ method: 'GET', url, headers: { origin: 'https://evil.example' } })
    t.notOk(
      Object.keys(res.headers).some((h) => h.startsWith('access-control-')),
      url,
    )
  }
})

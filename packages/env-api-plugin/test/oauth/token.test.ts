import { createHash, randomBytes } from 'node:crypto'
import t, { type Test } from 'tap'
import type { LightMyRequestResponse } from 'fastify'
import * as oauth from 'oauth4webapi'
import { apiVaults, build, DAY, obtainCode, signIn, tokenRequest, type Built } from './helpers.js'

const BASE = 'https://envkeep.example'
const CLI = `${BASE}/cli/oauth-client.json`
const MCP = `${BASE}/mcp/oauth-client.json`
const RESOURCE = `${BASE}/api/env`

/** An OAuth error answer: status, code, the four fields, JSON, no-store + no-cache, safe ASCII. */
function expectOAuthError(t: Test, res: LightMyRequestResponse, status: number, error: string): void {
  t.equal(res.statusCode, status, `status ${status}`)
  t.match(res.headers['content-type'], /^application\/json/)
  t.equal(res.headers['cache-control'], 'no-store')
  t.equal(res.headers['pragma'], 'no-cache')
  const body = res.json() as Record<string, unknown>
  t.equal(body.error, error, `error ${error}`)
  t.equal(body.where, 'OAuth')
  t.match(body.ref, /^[0-9A-HJKMNP-TV-Z]{10}$/)
  t.match(body.error_description, /^[\x20\x21\x23-\x5B\x5D-\x7E]+$/, 'description: ASCII without quote or backslash')
  t.same(Object.keys(body).sort(), ['error', 'error_description', 'ref', 'where'])
}

function codeParams(c: { code: string; verifier: string; redirectUri: string }): Record<string, string> {
  return { grant_type: 'authorization_code', code: c.code, code_verifier: c.verifier, redirect_uri: c.redirectUri, client_id: CLI, resource: RESOURCE }
}

function refreshParams(rt: string): Record<string, string> {
  return { grant_type: 'refresh_token', refresh_token: rt, client_id: CLI, resource: RESOURCE }
}

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex')

t.test('transport: form-encoded POST only, never a Fastify-shaped error', async (t) => {
  const b = await build(t, { baseUrl: BASE })
  const c = await obtainCode(b)
  const json = await b.app.inject({
    method: 'POST',
    url: '/oauth/token',
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify(codeParams(c)),
  })
  t.test('JSON body', async (t) => expectOAuthError(t, json, 400, 'invalid_request'))
  for (const type of ['text/plain', 'multipart/form-data; boundary=x', 'application/xml', 'application/x-www-form-urlencodedx']) {
    const res = await b.app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: { 'content-type': type },
      payload: new URLSearchParams(codeParams(c)).toString(),
    })
    t.test(`content type ${type}`, async (t) => expectOAuthError(t, res, 400, 'invalid_request'))
  }
  const none = await b.app.inject({ method: 'POST', url: '/oauth/token', payload: new URLSearchParams(codeParams(c)).toString() })
  t.test('no content type', async (t) => expectOAuthError(t, none, 400, 'invalid_request'))
  const empty = await b.app.inject({ method: 'POST', url: '/oauth/token' })
  t.test('no body', async (t) => expectOAuthError(t, empty, 400, 'invalid_request'))
  for (const method of ['GET', 'PUT', 'DELETE', 'PATCH'] as const) {
    const res = await b.app.inject({ method, url: '/oauth/token' })
    t.test(`${method} → 405`, async (t) => {
      expectOAuthError(t, res, 405, 'method_not_allowed')
      t.equal(res.headers.allow, 'POST')
    })
  }
  for (const name of ['grant_type', 'code', 'code_verifier', 'client_id', 'resource', 'redirect_uri']) {
    const p = codeParams(c)
    const res = await tokenRequest(b, { ...p, [name]: [p[name]!, p[name]!] })
    t.test(`${name} given twice`, async (t) => expectOAuthError(t, res, 400, 'invalid_request'))
  }
  // none of that consumed the code; plain form without charset works
  const ok = await b.app.inject({
    method: 'POST',
    url: '/oauth/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams(codeParams(c)).toString(),
  })
  t.equal(ok.statusCode, 200, 'the code still redeems')
  t.equal(ok.headers['cache-control'], 'no-store')
  t.equal(ok.headers['pragma'], 'no-cache')
  t.match(ok.headers['content-type'], /^application\/json/)
  const body = ok.json()
  t.same(Object.keys(body).sort(), ['access_token', 'envkeep_person', 'expires_in', 'refresh_token', 'scope', 'token_type'])
  t.equal(body.token_type, 'Bearer')
  t.equal(body.expires_in, 3600)
  t.same(body.envkeep_person, { email: 'ada@example.test', name: 'Ada Lovelace' }, 'who signed in, for the client to show (issue 25)')
})

t.test('grant_type=authorization_code refusals (checklist item 30)', async (t) => {
  const b = await build(t, { baseUrl: BASE })
  const rows: {
    name: string
    edit: (p: Record<string, string>, c: { verifier: string }) => void
    status?: number
    error: string
    headers?: Record<string, string>
  }[] = [
    { name: 'grant_type missing', edit: (p) => delete p['grant_type'], error: 'invalid_request' },
    { name: 'grant_type empty', edit: (p) => (p['grant_type'] = ''), error: 'invalid_request' },
    ...[
      'password',
      'client_credentials',
      'implicit',
      'urn:ietf:params:oauth:grant-type:device_code',
      'urn:ietf:params:oauth:grant-type:jwt-bearer',
      'junk',
    ].map((g) => ({
      name: `grant_type ${g}`,
      edit: (p: Record<string, string>) => (p['grant_type'] = g),
      error: 'unsupported_grant_type',
    })),
    { name: 'client_id missing', edit: (p) => delete p['client_id'], error: 'invalid_request' },
    { name: 'client_id of the MCP client', edit: (p) => (p['client_id'] = MCP), status: 401, error: 'invalid_client' },
    { name: 'client_id with a trailing slash', edit: (p) => (p['client_id'] = `${CLI}/`), status: 401, error: 'invalid_client' },
    { name: 'a client_secret', edit: (p) => (p['client_secret'] = 'canary-secret'), status: 401, error: 'invalid_client' },
    { name: 'code missing', edit: (p) => delete p['code'], error: 'invalid_request' },
    { name: 'code empty', edit: (p) => (p['code'] = ''), error: 'invalid_request' },
    { name: 'code unknown', edit: (p) => (p['code'] = randomBytes(32).toString('base64url')), error: 'invalid_grant' },
    { name: 'code_verifier missing', edit: (p) => delete p['code_verifier'], error: 'invalid_request' },
    { name: 'code_verifier too short', edit: (p) => (p['code_verifier'] = 'a'.repeat(42)), error: 'invalid_request' },
    { name: 'code_verifier too long', edit: (p) => (p['code_verifier'] = 'a'.repeat(129)), error: 'invalid_request' },
    { name: 'code_verifier with a bad character', edit: (p) => (p['code_verifier'] = `${'a'.repeat(50)}+`), error: 'invalid_request' },
    { name: 'code_verifier that does not match', edit: (p) => (p['code_verifier'] = oauth.generateRandomCodeVerifier()), error: 'invalid_grant' },
    {
      name: 'code_verifier equal to the challenge (plain PKCE)',
      edit: (p, c) => (p['code_verifier'] = createHash('sha256').update(c.verifier).digest('base64url')),
      error: 'invalid_grant',
    },
    {
      name: 'code_verifier one character off',
      edit: (p, c) => (p['code_verifier'] = c.verifier.slice(0, 42) + (c.verifier.endsWith('A') ? 'B' : 'A')),
      error: 'invalid_grant',
    },
    { name: 'redirect_uri with another port', edit: (p) => (p['redirect_uri'] = 'http://127.0.0.1:53683/callback'), error: 'invalid_grant' },
    { name: 'redirect_uri on [::1] instead of 127.0.0.1', edit: (p) => (p['redirect_uri'] = 'http://[::1]:53682/callback'), error: 'invalid_grant' },
    { name: 'resource missing', edit: (p) => delete p['resource'], error: 'invalid_target' },
    { name: 'resource with a trailing slash', edit: (p) => (p['resource'] = `${RESOURCE}/`), error: 'invalid_target' },
    { name: 'resource of the MCP endpoint', edit: (p) => (p['resource'] = `${BASE}/mcp`), error: 'invalid_target' },
    {
      name: 'Authorization: Basic',
      edit: () => undefined,
      status: 401,
      error: 'invalid_client',
      headers: { authorization: `Basic ${Buffer.from(`${CLI}:x`).toString('base64')}` },
    },
  ]
  for (const row of rows) {
    const c = await obtainCode(b)
    const p = codeParams(c)
    row.edit(p, c)
    const res = await tokenRequest(b, p, row.headers)
    t.test(row.name, async (t) => {
      expectOAuthError(t, res, row.status ?? 400, row.error)
      if (row.headers?.authorization) t.match(res.headers['www-authenticate'], /^Basic realm="envkeep"$/)
      t.notOk(res.body.includes('canary-secret'))
      // a refused request never consumed the code
      const again = await tokenRequest(b, codeParams(c))
      t.equal(again.statusCode, 200, 'the code still redeems')
    })
  }
  const c = await obtainCode(b)
  const { redirect_uri: _dropped, ...noRedirect } = codeParams(c)
  t.equal((await tokenRequest(b, noRedirect)).statusCode, 200, 'redirect_uri absent is accepted (OAuth 2.1)')
})

t.test('a code issued to another client is invalid_grant for the CLI', async (t) => {
  const b = await build(t, { baseUrl: BASE })
  const verifier = oauth.generateRandomCodeVerifier()
  const code = randomBytes(32).toString('base64url')
  await b.storage.saveAuthorizationCode({
    codeHash: sha256(code),
    clientId: MCP,
    redirectUri: 'http://127.0.0.1:5000/callback',
    codeChallenge: await oauth.calculatePKCECodeChallenge(verifier),
    resource: RESOURCE,
    scopes: ['env:read'],
    personId: 'p-ada',
    createdAt: b.clock.now,
    expiresAt: new Date(b.clock.now.getTime() + 60_000),
    consumedAt: null,
  })
  const res = await tokenRequest(b, codeParams({ code, verifier, redirectUri: 'http://127.0.0.1:5000/callback' }))
  expectOAuthError(t, res, 400, 'invalid_grant')
})

t.test('a code lives 60 seconds', async (t) => {
  const b = await build(t, { baseUrl: BASE })
  const T = b.clock.now.getTime()
  const late = await obtainCode(b)
  b.clock.now = new Date(T + 60_000)
  expectOAuthError(t, await tokenRequest(b, codeParams(late)), 400, 'invalid_grant')
  b.clock.now = new Date(T)
  const inTime = await obtainCode(b)
  b.clock.now = new Date(T + 59_999)
  t.equal((await tokenRequest(b, codeParams(inTime))).statusCode, 200)
})

t.test('a replayed code revokes what it issued; a replay with a wrong verifier revokes nothing (item 32)', async (t) => {
  const b = await build(t, { baseUrl: BASE })
  const c = await obtainCode(b)
  const first = await tokenRequest(b, codeParams(c))
  t.equal(first.statusCode, 200)
  const tokens = first.json()
  t.equal((await apiVaults(b, tokens.access_token)).statusCode, 200, 'the API accepts it')
  const replay = await tokenRequest(b, codeParams(c))
  expectOAuthError(t, replay, 400, 'invalid_grant')
  t.equal((await apiVaults(b, tokens.access_token)).statusCode, 401, 'the access token it issued is revoked')
  expectOAuthError(t, await tokenRequest(b, refreshParams(tokens.refresh_token)), 400, 'invalid_grant')

  const c2 = await obtainCode(b)
  const ok = (await tokenRequest(b, codeParams(c2))).json()
  const wrong = await tokenRequest(b, { ...codeParams(c2), code_verifier: oauth.generateRandomCodeVerifier() })
  expectOAuthError(t, wrong, 400, 'invalid_grant')
  const otherRedirect = await tokenRequest(b, { ...codeParams(c2), redirect_uri: 'http://127.0.0.1:1/callback' })
  expectOAuthError(t, otherRedirect, 400, 'invalid_grant')
  t.equal((await apiVaults(b, ok.access_token)).statusCode, 200, 'still accepted after a bad replay')
  t.equal((await tokenRequest(b, refreshParams(ok.refresh_token))).statusCode, 200, 'still refreshes')
})

t.test('two simultaneous redemptions of one code: exactly one 200 (50 rounds)', async (t) => {
  const b = await build(t, { baseUrl: BASE })
  let exact = 0
  for (let i = 0; i < 50; i++) {
    const c = await obtainCode(b)
    const res = await Promise.all([tokenRequest(b, codeParams(c)), tokenRequest(b, codeParams(c))])
    const statuses = res.map((r) => r.statusCode).sort()
    if (statuses[0] === 200 && statuses[1] === 400 && res.find((r) => r.statusCode === 400)!.json().error === 'invalid_grant') exact++
  }
  t.equal(exact, 50)
})

t.test('refresh rotates on every use; reuse revokes the whole sign-in (items 34-35)', async (t) => {
  const b = await build(t, { baseUrl: BASE })
  const { tokens: t1 } = await signIn(b)
  const r2 = await tokenRequest(b, refreshParams(t1.refresh_token))
  t.equal(r2.statusCode, 200)
  const t2 = r2.json()
  t.not(t2.refresh_token, t1.refresh_token)
  t.match(t2.refresh_token, /^ekrt_[A-Za-z0-9_-]{43}$/)
  t.match(t2.access_token, /^ekat_[A-Za-z0-9_-]{43}$/)
  t.equal(t2.expires_in, 3600)
  t.equal(t2.scope, t1.scope)
  t.same(t2.envkeep_person, { email: 'ada@example.test', name: 'Ada Lovelace' }, 'the refresh names the person too')
  t.equal(r2.headers['cache-control'], 'no-store')
  expectOAuthError(t, await tokenRequest(b, refreshParams(t1.refresh_token)), 400, 'invalid_grant')
  expectOAuthError(t, await tokenRequest(b, refreshParams(t2.refresh_token)), 400, 'invalid_grant')
  t.equal((await apiVaults(b, t2.access_token)).statusCode, 401, 'the newest access token is revoked too')
  t.equal((await apiVaults(b, t1.access_token)).statusCode, 401)
})

t.test('two parallel refreshes with one token: one wins, the other is reuse (item 36)', async (t) => {
  const b = await build(t, { baseUrl: BASE })
  for (let i = 0; i < 20; i++) {
    const { tokens } = await signIn(b)
    const res = await Promise.all([tokenRequest(b, refreshParams(tokens.refresh_token)), tokenRequest(b, refreshParams(tokens.refresh_token))])
    t.same(res.map((r) => r.statusCode).sort(), [200, 400])
    const winner = res.find((r) => r.statusCode === 200)!.json()
    t.equal(res.find((r) => r.statusCode === 400)!.json().error, 'invalid_grant')
    t.equal((await apiVaults(b, winner.access_token)).statusCode, 401, 'the sign-in is revoked')
  }
})

t.test('grant_type=refresh_token refusals consume nothing (items 31, 37, 38)', async (t) => {
  const b = await build(t, { baseUrl: BASE })
  const rows: { name: string; send: (b: Built, rt: string) => Promise<LightMyRequestResponse>; status?: number; error: string }[] = [
    {
      name: 'refresh_token missing',
      send: (b) => tokenRequest(b, { grant_type: 'refresh_token', client_id: CLI, resource: RESOURCE }),
      error: 'invalid_request',
    },
    { name: 'resource missing', send: (b, rt) => tokenRequest(b, { grant_type: 'refresh_token', refresh_token: rt, client_id: CLI }), error: 'invalid_target' },
    { name: 'resource different', send: (b, rt) => tokenRequest(b, { ...refreshParams(rt), resource: `${BASE}/mcp` }), error: 'invalid_target' },
    { name: 'resource with trailing slash', send: (b, rt) => tokenRequest(b, { ...refreshParams(rt), resource: `${RESOURCE}/` }), error: 'invalid_target' },
    { name: 'scope wider than granted', send: (b, rt) => tokenRequest(b, { ...refreshParams(rt), scope: 'env:read env:push' }), error: 'invalid_scope' },
    { name: 'scope unknown', send: (b, rt) => tokenRequest(b, { ...refreshParams(rt), scope: 'admin' }), error: 'invalid_scope' },
    {
      name: 'client_id missing',
      send: (b, rt) => tokenRequest(b, { grant_type: 'refresh_token', refresh_token: rt, resource: RESOURCE }),
      error: 'invalid_request',
    },
    { name: 'another client_id', send: (b, rt) => tokenRequest(b, { ...refreshParams(rt), client_id: MCP }), status: 401, error: 'invalid_client' },
    { name: 'a client_secret', send: (b, rt) => tokenRequest(b, { ...refreshParams(rt), client_secret: 'x' }), status: 401, error: 'invalid_client' },
    { name: 'refresh_token twice', send: (b, rt) => tokenRequest(b, { ...refreshParams(rt), refresh_token: [rt, rt] }), error: 'invalid_request' },
    {
      name: 'JSON body',
      send: (b, rt) =>
        b.app.inject({ method: 'POST', url: '/oauth/token', headers: { 'content-type': 'application/json' }, payload: JSON.stringify(refreshParams(rt)) }),
      error: 'invalid_request',
    },
    {
      name: 'Authorization header',
      send: (b, rt) => tokenRequest(b, refreshParams(rt), { authorization: 'Basic eDp5' }),
      status: 401,
      error: 'invalid_client',
    },
  ]
  for (const row of rows) {
    const { tokens } = await signIn(b, { scope: 'env:read' })
    const res = await row.send(b, tokens.refresh_token)
    t.test(row.name, async (t) => {
      expectOAuthError(t, res, row.status ?? 400, row.error)
      const retry = await tokenRequest(b, refreshParams(tokens.refresh_token))
      t.equal(retry.statusCode, 200, 'the correct retry still works (nothing was consumed)')
    })
  }
  for (const [name, token] of [
    ['unknown', `ekrt_${randomBytes(32).toString('base64url')}`],
    ['garbage', 'not-a-token'],
  ] as const) {
    expectOAuthError(t, await tokenRequest(b, refreshParams(token)), 400, 'invalid_grant')
    t.pass(name)
  }
  const { tokens } = await signIn(b)
  expectOAuthError(t, await tokenRequest(b, refreshParams(tokens.access_token)), 400, 'invalid_grant')
  t.equal((await tokenRequest(b, refreshParams(tokens.refresh_token))).statusCode, 200, 'an access token is not a refresh token')
  const narrower = await tokenRequest(b, {
    ...refreshParams((await signIn(b, { scope: 'env:push', allowPush: true })).tokens.refresh_token),
    scope: 'env:read',
  })
  t.equal(narrower.statusCode, 200, 'a narrower scope is accepted')
})

t.test('access tokens live one hour; the sign-in at most 365 days; idle sign-ins end after 90 days (item 39)', async (t) => {
  const b = await build(t, { baseUrl: BASE })
  const T = b.clock.now.getTime()
  const { tokens } = await signIn(b)
  b.clock.now = new Date(T + 3_600_000 - 1)
  t.equal((await apiVaults(b, tokens.access_token)).statusCode, 200)
  b.clock.now = new Date(T + 3_600_000)
  t.equal((await apiVaults(b, tokens.access_token)).statusCode, 401, 'expired after one hour')

  let rt = tokens.refresh_token
  for (const day of [80, 160, 240, 320, 364]) {
    b.clock.now = new Date(T + day * DAY)
    const r = await tokenRequest(b, refreshParams(rt))
    t.equal(r.statusCode, 200, `refresh on day ${day}`)
    rt = r.json().refresh_token
  }
  b.clock.now = new Date(T + 365 * DAY + 1000)
  expectOAuthError(t, await tokenRequest(b, refreshParams(rt)), 400, 'invalid_grant')
  t.pass('rotation never extends the sign-in past 365 days')

  b.clock.now = new Date(T)
  const idle = await signIn(b)
  b.clock.now = new Date(T + 90 * DAY + 1000)
  expectOAuthError(t, await tokenRequest(b, refreshParams(idle.tokens.refresh_token)), 400, 'invalid_grant')
  b.clock.now = new Date(T)
  const active = await signIn(b)
  b.clock.now = new Date(T + 89 * DAY)
  t.equal((await tokenRequest(b, refreshParams(active.tokens.refresh_token))).statusCode, 200, 'not idle at 89 days')
})

t.test('no token, code or secret reaches the log or an error answer', async (t) => {
  const b = await build(t, { baseUrl: BASE })
  const { tokens, code, verifier } = await signIn(b)
  const answers = [
    await tokenRequest(b, { ...refreshParams(tokens.refresh_token), resource: 'https://canary.example/x' }),
    await tokenRequest(b, { grant_type: 'authorization_code', code, code_verifier: verifier, client_id: CLI, resource: RESOURCE }),
  ]
  const seen = b.logs.join('\n') + answers.map((a) => a.body).join('\n')
  for (const s of [tokens.access_token, tokens.refresh_token, code, verifier, 'canary.example']) t.notOk(seen.includes(s))
})

import { createHash, randomBytes } from 'node:crypto'
import t, { type Test } from 'tap'
import { mintSignIn } from '../../src/testing/sign-in.js'
import type { LightMyRequestResponse } from 'fastify'
import { apiVaults, build, signIn, tokenRequest, type Built } from './helpers.js'

const BASE = 'https://envkeep.example'
const CLI = `${BASE}/cli/oauth-client.json`
const MCP = `${BASE}/mcp/oauth-client.json`
const RESOURCE = `${BASE}/api/env`
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex')

function revoke(b: Built, params: Record<string, string>, type = 'application/x-www-form-urlencoded'): Promise<LightMyRequestResponse> {
  const payload = type === 'application/json' ? JSON.stringify(params) : new URLSearchParams(params).toString()
  return b.app.inject({ method: 'POST', url: '/oauth/revoke', headers: { 'content-type': type }, payload })
}

function expect200(t: Test, res: LightMyRequestResponse): void {
  t.equal(res.statusCode, 200, 'always 200')
  t.equal(res.body, '', 'empty body')
  t.equal(res.headers['cache-control'], 'no-store')
}

/** Whether the sign-in behind these tokens still works at the API and at refresh (refreshing rotates: returns the new pair). */
async function alive(b: Built, tokens: { access_token: string }): Promise<boolean> {
  return (await apiVaults(b, tokens.access_token)).statusCode === 200
}

async function refreshes(b: Built, rt: string): Promise<boolean> {
  return (await tokenRequest(b, { grant_type: 'refresh_token', refresh_token: rt, client_id: CLI, resource: RESOURCE })).statusCode === 200
}

t.test('revoking either token ends the whole sign-in; the hint is ignored (items 41, 42)', async (t) => {
  const b = await build(t, { baseUrl: BASE })
  const cases: { name: string; which: 'access_token' | 'refresh_token'; hint?: string; type?: string }[] = [
    { name: 'refresh token, no hint', which: 'refresh_token' },
    { name: 'access token, no hint', which: 'access_token' },
    { name: 'refresh token, hint access_token', which: 'refresh_token', hint: 'access_token' },
    { name: 'access token, hint refresh_token', which: 'access_token', hint: 'refresh_token' },
    { name: 'access token, unknown hint', which: 'access_token', hint: 'id_token' },
    { name: 'refresh token as JSON', which: 'refresh_token', type: 'application/json' },
  ]
  for (const c of cases) {
    const { tokens } = await signIn(b)
    t.ok(await alive(b, tokens), `${c.name}: alive before`)
    const res = await revoke(b, { token: tokens[c.which], client_id: CLI, ...(c.hint ? { token_type_hint: c.hint } : {}) }, c.type)
    t.test(c.name, async (t) => {
      expect200(t, res)
      t.notOk(await alive(b, tokens), 'the API refuses the access token')
      t.notOk(await refreshes(b, tokens.refresh_token), 'the refresh token is refused')
    })
  }
})

t.test('always 200, and nothing changes, for tokens that are not the client’s own or not tokens (items 40, 43, 44)', async (t) => {
  const b = await build(t, { baseUrl: BASE })
  const { tokens } = await signIn(b)
  const revoked = await signIn(b)
  await revoke(b, { token: revoked.tokens.refresh_token, client_id: CLI })
  const cases: { name: string; params: Record<string, string>; type?: string }[] = [
    { name: 'unknown token', params: { token: `ekat_${randomBytes(32).toString('base64url')}`, client_id: CLI } },
    { name: 'garbage', params: { token: '%%%', client_id: CLI } },
    { name: 'already revoked', params: { token: revoked.tokens.access_token, client_id: CLI } },
    { name: 'token missing', params: { client_id: CLI } },
    { name: 'client_id missing', params: { token: tokens.access_token } },
    { name: 'client_id unknown', params: { token: tokens.access_token, client_id: MCP } },
    { name: 'client_id with a trailing slash', params: { token: tokens.refresh_token, client_id: `${CLI}/` } },
    { name: 'a very long token', params: { token: 'x'.repeat(10_000), client_id: CLI } },
    { name: 'text/plain body', params: { token: tokens.access_token, client_id: CLI }, type: 'text/plain' },
    { name: 'no body at all', params: {}, type: 'application/x-www-form-urlencoded' },
  ]
  for (const c of cases) {
    const res = await revoke(b, c.params, c.type)
    t.test(c.name, async (t) => expect200(t, res))
  }
  const badJson = await b.app.inject({ method: 'POST', url: '/oauth/revoke', headers: { 'content-type': 'application/json' }, payload: '{not json' })
  t.test('unparsable JSON', async (t) => expect200(t, badJson))
  const repeated = await b.app.inject({
    method: 'POST',
    url: '/oauth/revoke',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: `token=${tokens.access_token}&token=${tokens.access_token}&client_id=${encodeURIComponent(CLI)}`,
  })
  t.test('token given twice', async (t) => expect200(t, repeated))
  t.ok(await alive(b, tokens), 'the sign-in is untouched by all of that')

  const get = await b.app.inject({ method: 'GET', url: '/oauth/revoke' })
  t.equal(get.statusCode, 405)
  t.equal(get.json().error, 'method_not_allowed')
  t.equal(get.json().where, 'OAuth')
  t.equal(get.headers.allow, 'POST')
})

t.test('a client cannot revoke another client’s token', async (t) => {
  const b = await build(t, { baseUrl: BASE })
  // a sign-in of another client (the MCP endpoint's), minted through the store
  const { accessToken: access } = await mintSignIn(b.storage, {
    baseUrl: BASE,
    personId: 'p-ada',
    clientId: MCP,
    resource: `${BASE}/mcp`,
    scopes: ['env:read'],
    now: b.clock.now,
  })
  const now = b.clock.now
  expect200(t, await revoke(b, { token: access, client_id: CLI }))
  const grant = await b.storage.findToken(sha256(access), 'access', now, new Date(0))
  t.ok(grant, 'the MCP token still works')
  t.equal(grant?.signIn.revokedAt, null)
  t.equal((await apiVaults(b, access)).statusCode, 401, 'and an MCP-audience token is refused at /api/env')
})

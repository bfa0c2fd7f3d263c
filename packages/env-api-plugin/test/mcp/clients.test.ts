import t from 'tap'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import * as oauth from 'oauth4webapi'
import { createClientDocumentFetcher, isDocumentClientId, MAX_DOCUMENT_BYTES } from '../../src/mcp/client-document.js'
import { redirectKind, redirectMatches } from '../../src/mcp/redirect.js'
import { REGISTRATIONS_PER_HOUR } from '../../src/mcp/register.js'
import { build, cookiesOf, parseConsentForm, PEOPLE } from '../oauth/helpers.js'

const BASE = 'https://envkeep.example'
const DAY = 86_400_000

async function documentServer(t: { teardown(fn: () => unknown): void }, handle: (req: IncomingMessage, res: ServerResponse, base: string) => void) {
  let base = ''
  let hits = 0
  const server = createServer((req, res) => {
    hits++
    handle(req, res, base)
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  t.teardown(() => new Promise<void>((r) => server.close(() => r())))
  return { base, hits: () => hits }
}

t.test('redirect URIs: loopback on any port, https, private-use schemes; nothing a browser would run', async (t) => {
  for (const ok of [
    'http://127.0.0.1:8080/callback',
    'http://localhost:8787/callback',
    'http://[::1]/cb',
    'https://www.cursor.com/oauth/callback',
    'cursor://anysphere.cursor-mcp/oauth/callback',
    'com.example.app:/oauth',
  ])
    t.ok(redirectKind(ok), ok)
  for (const bad of [
    'javascript:alert(1)',
    'data:text/html,x',
    'file:///etc/passwd',
    'http://example.com/cb',
    'https://x.example/cb#f',
    'https://u:p@x.example/cb',
    'https://x.example/cb?a=1',
    'http://127.0.0.1:99999/cb',
    '',
  ])
    t.notOk(redirectKind(bad), bad)
  t.ok(redirectMatches('http://127.0.0.1:5555/callback', ['http://127.0.0.1/callback']), 'loopback: any port')
  t.notOk(redirectMatches('http://127.0.0.1:5555/other', ['http://127.0.0.1/callback']), 'but the same path')
  t.notOk(redirectMatches('https://www.cursor.com/oauth/callback2', ['https://www.cursor.com/oauth/callback']), 'https: exactly')
})

t.test('client metadata documents: fetched once and cached, checked, bounded; private addresses refused before any connection', async (t) => {
  const docs = await documentServer(t, (req, res, base) => {
    const doc = { client_id: `${base}${req.url}`, client_name: 'Doc client', redirect_uris: ['http://127.0.0.1/callback'] }
    if (req.url === '/good.json') return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(doc))
    if (req.url === '/other-id.json')
      return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ...doc, client_id: `${base}/good.json` }))
    if (req.url === '/huge.json')
      return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ...doc, pad: 'x'.repeat(MAX_DOCUMENT_BYTES) }))
    if (req.url === '/moved.json') return void res.writeHead(302, { location: `${base}/good.json` }).end()
    if (req.url === '/html.json') return void res.writeHead(200, { 'content-type': 'text/html' }).end('<p>hi</p>')
    if (req.url === '/bad-redirect.json')
      return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ...doc, redirect_uris: ['javascript:alert(1)'] }))
    if (req.url === '/secret.json')
      return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ...doc, token_endpoint_auth_method: 'client_secret_basic' }))
    res.writeHead(404).end()
  })
  const clock = { now: new Date('2026-11-21T12:00:00Z') }
  const fetchDoc = createClientDocumentFetcher({ allowHttpLoopback: true, now: () => clock.now })
  const good = await fetchDoc(`${docs.base}/good.json`)
  t.ok(good.ok && good.document.name === 'Doc client')
  await fetchDoc(`${docs.base}/good.json`)
  t.equal(docs.hits(), 1, 'the second lookup comes from the cache')
  clock.now = new Date(clock.now.getTime() + 11 * 60_000)
  await fetchDoc(`${docs.base}/good.json`)
  t.equal(docs.hits(), 2, 'fetched again after ten minutes')
  for (const [path, why] of [
    ['/other-id.json', /another client_id/],
    ['/huge.json', /over 16384 bytes/],
    ['/moved.json', /HTTP 302 \(redirects are not followed\)/],
    ['/html.json', /not JSON/],
    ['/bad-redirect.json', /no acceptable redirect_uris/],
    ['/secret.json', /not a public client/],
    ['/missing.json', /HTTP 404/],
  ] as const) {
    const r = await fetchDoc(`${docs.base}${path}`)
    t.notOk(r.ok, path)
    if (!r.ok) t.match(r.why, why, path)
  }

  // https only without the test setting; private addresses refused before connecting
  t.notOk(isDocumentClientId(`${docs.base}/good.json`, false), 'plain http is no client id')
  t.notOk(isDocumentClientId('https://client.example/', false), 'a root path is no client id')
  t.ok(isDocumentClientId('https://client.example/oauth.json', false))
  let resolved = 0
  const strict = createClientDocumentFetcher({
    allowHttpLoopback: false,
    now: () => clock.now,
    resolveHost: async () => {
      resolved++
      return ['10.1.2.3']
    },
  })
  const literal = await strict('https://10.1.2.3/client.json')
  t.notOk(literal.ok)
  if (!literal.ok) t.match(literal.why, /private, loopback or link-local/)
  const named = await strict('https://client.internal.example/client.json')
  t.notOk(named.ok)
  if (!named.ok) t.match(named.why, /private, loopback or link-local/)
  t.equal(resolved, 1, 'the name was resolved by the checked lookup, and refused')
})

t.test('dynamic registration: shape, only the MCP resource, expiry when unused, kept once allowed, rate limited', async (t) => {
  const b = await build(t, { baseUrl: BASE, extra: { mcp: true, rateLimit: { perMinute: 1000, perDay: 100000 } } })
  const register = (body: unknown, ip = '127.0.0.1') =>
    b.app.inject({ method: 'POST', url: '/oauth/register', remoteAddress: ip, headers: { 'content-type': 'application/json' }, payload: JSON.stringify(body) })
  const res = await register({ client_name: 'Cursor', redirect_uris: ['http://localhost:8787/callback'] })
  t.equal(res.statusCode, 201)
  const reg = res.json() as Record<string, unknown>
  t.match(reg['client_id'], /^mcp_[A-Za-z0-9_-]{32}$/)
  t.equal(reg['token_endpoint_auth_method'], 'none')
  t.equal(res.headers['cache-control'], 'no-store')
  t.equal((await register({ redirect_uris: ['http://localhost/cb'], token_endpoint_auth_method: 'client_secret_basic' })).statusCode, 400)
  t.equal((await b.app.inject({ method: 'POST', url: '/oauth/register', headers: { 'content-type': 'application/json' }, payload: '{' })).statusCode, 400)

  const verifier = oauth.generateRandomCodeVerifier()
  const query = async (resource: string) =>
    new URLSearchParams({
      response_type: 'code',
      client_id: String(reg['client_id']),
      redirect_uri: 'http://localhost:8787/callback',
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      resource,
      scope: 'mcp:read mcp:propose',
    })
  const ada = `test_person=${PEOPLE.ada!.id}`
  const signedOut = await b.app.inject({ method: 'GET', url: `/oauth/authorize?${await query(`${BASE}/mcp`)}` })
  t.equal(signedOut.statusCode, 303, 'signed out: to the sign-in page first')
  const back = new URL(decodeURIComponent(String(signedOut.headers.location).split('return_to=')[1] ?? ''), BASE)
  t.equal(back.pathname, '/oauth/authorize')
  t.equal(back.searchParams.get('client_id'), reg['client_id'], 'and back to the same request')
  t.notOk(back.searchParams.has('person'))
  t.notOk(back.searchParams.has('state'), 'no state was sent, none is made up')
  const asApi = await b.app.inject({ method: 'GET', url: `/oauth/authorize?${await query(`${BASE}/api/env`)}`, headers: { cookie: ada } })
  t.equal(asApi.statusCode, 303)
  t.match(asApi.headers.location, /error=invalid_target/, 'a registered client can ask only for the MCP resource')
  const bogus = await b.app.inject({
    method: 'GET',
    url: `/oauth/authorize?${(await query(`${BASE}/mcp`)).toString().replace('localhost%3A8787%2Fcallback', 'localhost%3A8787%2Fother')}`,
    headers: { cookie: ada },
  })
  t.equal(bogus.statusCode, 400, 'an unregistered redirect URI: an error page, no redirect')
  t.notOk(bogus.headers.location)

  // unused for a day: gone
  const later = await register({ client_name: 'Later', redirect_uris: ['http://127.0.0.1/callback'] })
  const laterId = String((later.json() as Record<string, unknown>)['client_id'])
  // allowed once: kept
  const page = await b.app.inject({ method: 'GET', url: `/oauth/authorize?${await query(`${BASE}/mcp`)}`, headers: { cookie: ada } })
  t.equal(page.statusCode, 200)
  t.match(page.body, /known only by a redirect to this computer/)
  t.match(page.body, /Also let it propose changes/)
  t.notMatch(page.body, /name="allow_propose" value="yes" checked/, 'propose changes is not ticked for the person')
  const form = parseConsentForm(page.body)
  const allowed = await b.app.inject({
    method: 'POST',
    url: form.action,
    headers: { cookie: `${ada}; ${cookiesOf(page.headers['set-cookie'])}`, 'content-type': 'application/x-www-form-urlencoded', origin: BASE },
    payload: new URLSearchParams({ ...form.fields, decision: 'allow' }).toString(),
  })
  t.equal(allowed.statusCode, 303)
  const code = new URL(String(allowed.headers.location)).searchParams.get('code') ?? ''
  const token = (params: Record<string, string>) =>
    b.app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams(params).toString(),
    })
  const wrongResource = await token({
    grant_type: 'authorization_code',
    code,
    code_verifier: verifier,
    client_id: String(reg['client_id']),
    resource: `${BASE}/api/env`,
  })
  t.equal(wrongResource.statusCode, 400)
  t.equal((wrongResource.json() as { error: string }).error, 'invalid_target')
  const issued = await token({ grant_type: 'authorization_code', code, code_verifier: verifier, client_id: String(reg['client_id']), resource: `${BASE}/mcp` })
  t.equal(issued.statusCode, 200)
  t.equal((issued.json() as { scope: string }).scope, 'mcp:read', 'unticked: read only')
  t.match((issued.json() as { access_token: string }).access_token, /^ekat_/)
  t.notOk(issued.body.includes('envkeep_person') || issued.body.includes(PEOPLE.ada!.email), 'an MCP client is not told who signed in')
  const unknown = await token({
    grant_type: 'authorization_code',
    code,
    code_verifier: verifier,
    client_id: 'mcp_BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB',
    resource: `${BASE}/mcp`,
  })
  t.equal(unknown.statusCode, 401)
  t.equal((unknown.json() as { error: string }).error, 'invalid_client')

  b.clock.now = new Date(b.clock.now.getTime() + DAY + 1)
  const expired = await b.app.inject({
    method: 'GET',
    url: `/oauth/authorize?${(await query(`${BASE}/mcp`)).toString().replace(String(reg['client_id']), laterId).replace('localhost%3A8787', '127.0.0.1%3A4000')}`,
    headers: { cookie: ada },
  })
  t.equal(expired.statusCode, 400)
  t.match(expired.body, /expired unused/)
  const kept = await b.app.inject({ method: 'GET', url: `/oauth/authorize?${await query(`${BASE}/mcp`)}`, headers: { cookie: ada } })
  t.equal(kept.statusCode, 200, 'the allowed client stays registered')

  // rate limited per address
  let last = 0
  for (let i = 0; i <= REGISTRATIONS_PER_HOUR; i++) last = (await register({ redirect_uris: ['http://127.0.0.1/cb'] }, '127.0.0.9')).statusCode
  t.equal(last, 429, `more than ${REGISTRATIONS_PER_HOUR} an hour from one address`)
  t.equal((await register({ redirect_uris: ['http://127.0.0.1/cb'] }, '127.0.0.10')).statusCode, 201, 'another address is not held back')
})

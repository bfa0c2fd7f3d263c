import t, { type Test } from 'tap'
import { authorizeQuery, build, cookiesOf, parseConsentForm, PEOPLE, tokenRequest, type Built } from './helpers.js'

const BASE = 'https://envkeep.example'
const ADA = `test_person=${PEOPLE.ada!.id}`

function get(b: Built, query: URLSearchParams | string, headers: Record<string, string> = {}) {
  return b.app.inject({ method: 'GET', url: `/oauth/authorize?${query}`, headers })
}

/** Asserts a refusal shown as a page: 400, HTML, no Location. */
function expectPage(t: Test, res: Awaited<ReturnType<typeof get>>, status = 400): void {
  t.equal(res.statusCode, status, 'status')
  t.notOk(res.headers.location, 'no Location')
  t.match(res.headers['content-type'], /^text\/html/)
  t.match(res.headers['content-security-policy'], /frame-ancestors 'none'/)
  t.match(res.body, /Reference<\/dt><dd><code>[0-9A-Z]{10}<\/code>/, 'a reference')
}

/** Asserts a refusal by redirect to the redirect URI with error, state and iss. */
function expectRedirect(t: Test, res: Awaited<ReturnType<typeof get>>, redirectUri: string, error: string, state: string | null): URL {
  t.equal(res.statusCode, 303, 'status 303')
  const loc = String(res.headers.location)
  t.ok(loc.startsWith(`${redirectUri}?`), 'back to the redirect URI')
  const u = new URL(loc)
  t.equal(u.searchParams.get('error'), error, 'error')
  t.ok(u.searchParams.get('error_description'), 'error_description')
  t.match(u.searchParams.get('error_description') ?? '', /^[\x20\x21\x23-\x5B\x5D-\x7E]+$/, 'description is safe ASCII')
  t.equal(u.searchParams.get('state'), state, 'state')
  t.same(u.searchParams.getAll('iss'), [BASE], 'iss, once')
  t.notOk(u.searchParams.has('code'), 'no code')
  t.equal(u.searchParams.get('where'), 'OAuth')
  t.match(u.searchParams.get('ref'), /^[0-9A-HJKMNP-TV-Z]{10}$/, 'a ref that finds the log record')
  return u
}

t.test('an unknown client id never redirects, and nothing is fetched', async (t) => {
  const b = await build(t, { baseUrl: BASE })
  const realFetch = globalThis.fetch
  let fetches = 0
  globalThis.fetch = ((...a: Parameters<typeof fetch>) => {
    fetches++
    return realFetch(...a)
  }) as typeof fetch
  t.teardown(() => {
    globalThis.fetch = realFetch
  })
  const cases: [string, string | string[] | null][] = [
    ['missing', null],
    ['empty', ''],
    ['the MCP client', `${BASE}/mcp/oauth-client.json`],
    ['another https URL', 'https://evil.example/cli/oauth-client.json'],
    ['an http variant', 'http://envkeep.example/cli/oauth-client.json'],
    ['a trailing slash', `${BASE}/cli/oauth-client.json/`],
    ['a fragment', `${BASE}/cli/oauth-client.json#frag`],
    ['upper case', `${BASE}/CLI/oauth-client.json`],
    ['given twice', [`${BASE}/cli/oauth-client.json`, `${BASE}/cli/oauth-client.json`]],
  ]
  for (const [name, value] of cases) {
    const { query } = await authorizeQuery(b)
    query.delete('client_id')
    if (value !== null) for (const v of Array.isArray(value) ? value : [value]) query.append('client_id', v)
    const res = await get(b, query, { cookie: ADA })
    t.test(`client_id ${name}`, async (t) => expectPage(t, res))
  }
  t.equal(fetches, 0, 'no outbound fetch')
})

t.test('a bad redirect URI never redirects (checklist item 17)', async (t) => {
  const b = await build(t, { baseUrl: BASE })
  const rejects = [
    'http://localhost:5000/callback',
    'http://LOCALHOST:5000/callback',
    'http://127.0.0.2:5000/callback',
    'http://127.000.000.001:5000/callback',
    'http://2130706433:5000/callback',
    'http://[0:0:0:0:0:0:0:1]:5000/callback',
    'http://[::ffff:127.0.0.1]:5000/callback',
    'http://evil.example:5000/callback',
    'HTTP://127.0.0.1:5000/callback',
    'https://127.0.0.1:5000/callback',
    'http://127.0.0.1:5000/callback/',
    'http://127.0.0.1:5000/Callback',
    'http://127.0.0.1:5000/callback/../callback',
    'http://127.0.0.1:5000/%63allback',
    'http://127.0.0.1:5000/cb',
    'http://127.0.0.1:5000/callback?x=1',
    'http://127.0.0.1:5000/callback#f',
    'http://u@127.0.0.1:5/callback',
    'http://127.0.0.1:5@evil.com/callback',
    'http://127.0.0.1:0/callback',
    'http://127.0.0.1:65536/callback',
    'http://127.0.0.1:99999/callback',
    'http://127.0.0.1:-1/callback',
    'http://127.0.0.1:abc/callback',
    'http://127.0.0.1:05000/callback',
    'http://127.0.0.1/callback',
    'http://[::1]/callback',
    'http://127.0.0.1:/callback',
    ' http://127.0.0.1:5000/callback',
  ]
  for (const uri of rejects) {
    const { query } = await authorizeQuery(b, { redirectUri: uri })
    const res = await get(b, query, { cookie: ADA })
    t.test(`redirect_uri ${JSON.stringify(uri)}`, async (t) => expectPage(t, res))
  }
  const { query } = await authorizeQuery(b)
  query.delete('redirect_uri')
  t.test('redirect_uri missing', async (t) => expectPage(t, await get(b, query, { cookie: ADA })))
  query.append('redirect_uri', 'http://127.0.0.1:5000/callback')
  query.append('redirect_uri', 'http://127.0.0.1:5000/callback')
  t.test('redirect_uri twice', async (t) => expectPage(t, await get(b, query, { cookie: ADA })))
})

t.test('every other error redirects with error, error_description, state and iss', async (t) => {
  const b = await build(t, { baseUrl: BASE })
  const REDIRECT = 'http://127.0.0.1:53682/callback'
  const cases: { name: string; edit: (q: URLSearchParams) => void; error: string; noState?: boolean }[] = [
    { name: 'state missing', edit: (q) => q.delete('state'), error: 'invalid_request', noState: true },
    { name: 'response_type missing', edit: (q) => q.delete('response_type'), error: 'invalid_request' },
    { name: 'response_type token', edit: (q) => q.set('response_type', 'token'), error: 'unsupported_response_type' },
    { name: 'response_type id_token', edit: (q) => q.set('response_type', 'id_token'), error: 'unsupported_response_type' },
    { name: 'response_type code id_token', edit: (q) => q.set('response_type', 'code id_token'), error: 'unsupported_response_type' },
    { name: 'code_challenge missing', edit: (q) => q.delete('code_challenge'), error: 'invalid_request' },
    { name: 'code_challenge empty', edit: (q) => q.set('code_challenge', ''), error: 'invalid_request' },
    { name: 'code_challenge_method missing', edit: (q) => q.delete('code_challenge_method'), error: 'invalid_request' },
    { name: 'code_challenge_method plain', edit: (q) => q.set('code_challenge_method', 'plain'), error: 'invalid_request' },
    { name: 'code_challenge_method s256', edit: (q) => q.set('code_challenge_method', 's256'), error: 'invalid_request' },
    { name: 'code_challenge_method S512', edit: (q) => q.set('code_challenge_method', 'S512'), error: 'invalid_request' },
    { name: 'code_challenge too short', edit: (q) => q.set('code_challenge', 'a'.repeat(42)), error: 'invalid_request' },
    { name: 'code_challenge too long', edit: (q) => q.set('code_challenge', 'a'.repeat(44)), error: 'invalid_request' },
    { name: 'code_challenge not base64url', edit: (q) => q.set('code_challenge', `${'a'.repeat(42)}+`), error: 'invalid_request' },
    { name: 'resource missing', edit: (q) => q.delete('resource'), error: 'invalid_target' },
    { name: 'resource trailing slash', edit: (q) => q.set('resource', `${BASE}/api/env/`), error: 'invalid_target' },
    { name: 'resource other case', edit: (q) => q.set('resource', `${BASE}/API/env`), error: 'invalid_target' },
    { name: 'resource with query', edit: (q) => q.set('resource', `${BASE}/api/env?x=1`), error: 'invalid_target' },
    { name: 'resource with fragment', edit: (q) => q.set('resource', `${BASE}/api/env#f`), error: 'invalid_target' },
    { name: 'resource the MCP endpoint', edit: (q) => q.set('resource', `${BASE}/mcp`), error: 'invalid_target' },
    { name: 'resource relative', edit: (q) => q.set('resource', '/api/env'), error: 'invalid_target' },
    { name: 'resource the base URL', edit: (q) => q.set('resource', BASE), error: 'invalid_target' },
    { name: 'resource of another host', edit: (q) => q.set('resource', 'https://evil.example/api/env'), error: 'invalid_target' },
    { name: 'resource twice', edit: (q) => q.append('resource', `${BASE}/api/env`), error: 'invalid_request' },
    { name: 'state twice', edit: (q) => q.append('state', 'other'), error: 'invalid_request', noState: true },
    { name: 'response_type twice', edit: (q) => q.append('response_type', 'code'), error: 'invalid_request' },
    { name: 'unknown scope', edit: (q) => q.set('scope', 'admin'), error: 'invalid_scope' },
    { name: 'one unknown scope among known', edit: (q) => q.set('scope', 'env:read env:delete'), error: 'invalid_scope' },
  ]
  for (const c of cases) {
    const { query, state } = await authorizeQuery(b)
    c.edit(query)
    const res = await get(b, query, { cookie: ADA, host: 'evil.example' })
    t.test(c.name, async (t) => {
      expectRedirect(t, res, REDIRECT, c.error, c.noState ? null : state)
    })
  }
})

t.test('unknown parameters are ignored; any port 1-65535 on both loopback hosts; the Location keeps host and port', async (t) => {
  const b = await build(t, { baseUrl: BASE })
  for (const host of ['127.0.0.1', '[::1]']) {
    for (const port of [1, 80, 1024, 53682, 65535]) {
      const redirectUri = `http://${host}:${port}/callback`
      const { query, state } = await authorizeQuery(b, { redirectUri, extra: { prompt: 'consent', foo: 'bar' } })
      const res = await postConsent(b, query)
      const raw = String(res.headers.location)
      t.ok(raw.startsWith(`${redirectUri}?`), `${redirectUri} kept exactly`)
      t.equal(new URL(raw).searchParams.get('state'), state)
    }
  }
})

t.test('a person who is not signed in is sent to sign in, and back to the same request', async (t) => {
  const b = await build(t, { baseUrl: BASE })
  const { query } = await authorizeQuery(b, { scope: 'env:read' })
  const res = await get(b, query)
  t.equal(res.statusCode, 303)
  const loc = new URL(String(res.headers.location), BASE)
  t.equal(loc.pathname, '/login')
  const back = loc.searchParams.get('return_to') ?? ''
  t.ok(back.startsWith('/oauth/authorize?'))
  const q = new URLSearchParams(back.slice(back.indexOf('?') + 1))
  for (const k of ['client_id', 'redirect_uri', 'state', 'code_challenge', 'code_challenge_method', 'resource', 'response_type', 'scope']) {
    t.equal(q.get(k), query.get(k), `return_to keeps ${k}`)
  }
  const again = await get(b, back.slice(back.indexOf('?') + 1), { cookie: ADA })
  t.equal(again.statusCode, 200, 'the returned-to request shows the consent page')
})

t.test('the consent page: who asks, for what, where the answer goes; strict headers', async (t) => {
  const b = await build(t, { baseUrl: BASE })
  const withPush = await authorizeQuery(b, { scope: 'env:read env:push', redirectUri: 'http://[::1]:5000/callback' })
  const res = await get(b, withPush.query, { cookie: `test_person=${PEOPLE.bob!.id}` })
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /^text\/html/)
  t.equal(res.headers['cache-control'], 'no-store, private')
  t.equal(res.headers['x-frame-options'], 'DENY')
  const csp = String(res.headers['content-security-policy'])
  t.match(csp, "form-action 'self' http:;", 'an IPv6 callback cannot be named in CSP: http targets only')
  const v4 = await authorizeQuery(b, { scope: 'env:read', redirectUri: 'http://127.0.0.1:53682/callback' })
  const res4 = await get(b, v4.query, { cookie: `test_person=${PEOPLE.bob!.id}` })
  t.match(String(res4.headers['content-security-policy']), "form-action 'self' http://127.0.0.1:53682;", 'exactly this callback origin')
  t.match(csp, "frame-ancestors 'none'")
  t.match(csp, "default-src 'none'")
  t.notMatch(csp, 'unsafe-inline')
  t.match(res.body, 'envkeep command-line client')
  t.match(res.body, 'envkeep.example', 'the client id host')
  t.match(res.body, '[::1]:5000', 'the redirect host and port')
  t.match(res.body, 'a program running on this computer')
  t.match(res.body, 'Allow this sign-in to send .env files')
  t.match(res.body, /<button type="submit" name="decision" value="allow" class="primary">Allow<\/button>/)
  t.match(res.body, /<button type="submit" name="decision" value="deny" class="secondary">Deny<\/button>/, 'Deny is the secondary button')
  t.match(res.body, /<input type="checkbox" name="allow_push" value="yes" checked>/, 'env:push was asked for: the box starts ticked')
  t.match(res.body, 'Bob &lt;b&gt;Builder&lt;/b&gt;', 'names are escaped')
  t.notMatch(res.body, '<b>Builder</b>')
  t.notMatch(res.body, /<script(?![^>]*\bsrc=)|\sstyle=|<style/, 'no inline script or style')
  const form = parseConsentForm(res.body)
  t.equal(form.action, '/oauth/authorize')
  t.ok(form.fields['_csrf'], 'a CSRF token')
  t.match(String(res.headers['set-cookie']), /envkeep_csrf=.*HttpOnly/i)

  const readOnly = await authorizeQuery(b, { scope: 'env:read' })
  const page2 = await get(b, readOnly.query, { cookie: ADA })
  t.notMatch(page2.body, 'send .env files', 'no checkbox when env:push was not asked for')
  const noScope = await authorizeQuery(b)
  t.notMatch((await get(b, noScope.query, { cookie: ADA })).body, 'send .env files')
})

async function postConsent(
  b: Built,
  query: URLSearchParams,
  o: { getAs?: string; postAs?: string | null; edit?: (f: Record<string, string>) => void; csrf?: 'none' | 'wrong-cookie' } = {},
) {
  const page = await get(b, query, { cookie: `test_person=${o.getAs ?? PEOPLE.ada!.id}` })
  const form = parseConsentForm(page.body)
  const fields: Record<string, string> = { ...form.fields, decision: 'allow' }
  o.edit?.(fields)
  if (o.csrf === 'none') delete fields['_csrf']
  const csrfCookie = o.csrf === 'wrong-cookie' ? 'envkeep_csrf=AAAAAAAAAAAAAAAAAAAAAAAA' : cookiesOf(page.headers['set-cookie'])
  const person = o.postAs === null ? '' : `test_person=${o.postAs ?? o.getAs ?? PEOPLE.ada!.id}; `
  return b.app.inject({
    method: 'POST',
    url: '/oauth/authorize',
    headers: { cookie: `${person}${csrfCookie}`, 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams(fields).toString(),
  })
}

t.test('consent answers: deny, CSRF, another person, tampered fields, signed out', async (t) => {
  const b = await build(t, { baseUrl: BASE })
  const REDIRECT = 'http://127.0.0.1:53682/callback'

  const deny = await authorizeQuery(b)
  const denied = await postConsent(b, deny.query, { edit: (f) => (f['decision'] = 'deny') })
  expectRedirect(t, denied, REDIRECT, 'access_denied', deny.state)

  const noDecision = await authorizeQuery(b)
  expectRedirect(t, await postConsent(b, noDecision.query, { edit: (f) => delete f['decision'] }), REDIRECT, 'access_denied', noDecision.state)

  const csrf = await authorizeQuery(b)
  expectPage(t, await postConsent(b, csrf.query, { csrf: 'none' }), 403)
  expectPage(t, await postConsent(b, csrf.query, { csrf: 'wrong-cookie' }), 403)

  const other = await authorizeQuery(b)
  expectPage(t, await postConsent(b, other.query, { getAs: PEOPLE.ada!.id, postAs: PEOPLE.bob!.id }), 400)

  const tamperedRedirect = await authorizeQuery(b)
  expectPage(t, await postConsent(b, tamperedRedirect.query, { edit: (f) => (f['redirect_uri'] = 'http://evil.example:1/callback') }), 400)
  const tamperedClient = await authorizeQuery(b)
  expectPage(t, await postConsent(b, tamperedClient.query, { edit: (f) => (f['client_id'] = `${BASE}/mcp/oauth-client.json`) }), 400)
  const tamperedResource = await authorizeQuery(b)
  expectRedirect(
    t,
    await postConsent(b, tamperedResource.query, { edit: (f) => (f['resource'] = `${BASE}/mcp`) }),
    REDIRECT,
    'invalid_target',
    tamperedResource.state,
  )
  const tamperedMethod = await authorizeQuery(b)
  expectRedirect(
    t,
    await postConsent(b, tamperedMethod.query, { edit: (f) => (f['code_challenge_method'] = 'plain') }),
    REDIRECT,
    'invalid_request',
    tamperedMethod.state,
  )

  const signedOut = await authorizeQuery(b)
  const out = await postConsent(b, signedOut.query, { postAs: null })
  t.equal(out.statusCode, 303)
  t.match(String(out.headers.location), /^\/login\?return_to=/, 'signed out: to the sign-in page, not the client')

  const json = await b.app.inject({ method: 'POST', url: '/oauth/authorize', headers: { cookie: ADA, 'content-type': 'application/json' }, payload: '{}' })
  expectPage(t, json, 400)
  t.equal(json.headers.location, undefined)
})

t.test('the success redirect: exactly one code, state (echoed byte for byte) and iss', async (t) => {
  const b = await build(t, { baseUrl: BASE })
  const weird = `&=+%#/ ?é\u00e9日本 ${'x'.repeat(1500)}`
  const { query, verifier } = await authorizeQuery(b, { state: weird })
  const res = await postConsent(b, query)
  t.equal(res.statusCode, 303)
  const loc = new URL(String(res.headers.location))
  t.ok(String(res.headers.location).startsWith('http://127.0.0.1:53682/callback?'))
  t.same(loc.searchParams.getAll('state'), [weird])
  t.same(loc.searchParams.getAll('iss'), [BASE])
  const codes = loc.searchParams.getAll('code')
  t.equal(codes.length, 1)
  t.match(codes[0], /^[A-Za-z0-9_-]{43}$/, 'an opaque 256-bit code')
  t.notOk(codes[0]!.includes(query.get('code_challenge')!), 'the challenge is not in the code')
  t.same([...loc.searchParams.keys()].sort(), ['code', 'iss', 'state'], 'nothing else')
  // and it redeems
  const tok = await tokenRequest(b, {
    grant_type: 'authorization_code',
    code: codes[0]!,
    code_verifier: verifier,
    redirect_uri: 'http://127.0.0.1:53682/callback',
    client_id: `${BASE}/cli/oauth-client.json`,
    resource: `${BASE}/api/env`,
  })
  t.equal(tok.statusCode, 200)
})

t.test('env:push only when asked for and ticked', async (t) => {
  const b = await build(t, { baseUrl: BASE })
  const cases: { scope?: string; tick: boolean; want: string }[] = [
    { scope: 'env:read env:push', tick: true, want: 'env:read env:push' },
    { scope: 'env:push', tick: true, want: 'env:read env:push' },
    { scope: 'env:read env:push', tick: false, want: 'env:read' },
    { scope: 'env:read', tick: true, want: 'env:read' },
    { tick: true, want: 'env:read' },
  ]
  for (const c of cases) {
    const q = await authorizeQuery(b, c.scope === undefined ? {} : { scope: c.scope })
    const res = await postConsent(b, q.query, {
      edit: (f) => {
        if (c.tick) f['allow_push'] = 'yes'
      },
    })
    const code = new URL(String(res.headers.location)).searchParams.get('code')!
    const tok = await tokenRequest(b, {
      grant_type: 'authorization_code',
      code,
      code_verifier: q.verifier,
      redirect_uri: q.redirectUri,
      client_id: `${BASE}/cli/oauth-client.json`,
      resource: `${BASE}/api/env`,
    })
    t.equal(tok.json().scope, c.want, `scope ${c.scope ?? '(none)'}, box ${c.tick ? 'ticked' : 'not ticked'}`)
  }
})

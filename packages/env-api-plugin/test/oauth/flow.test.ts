import t from 'tap'
import * as oauth from 'oauth4webapi'
import { build, cookiesOf, parseConsentForm, PEOPLE } from './helpers.js'

const insecure = { [oauth.allowInsecureRequests]: true } as const

/**
 * The whole sign-in with an independent client library (oauth4webapi) against
 * a real server on 127.0.0.1: discovery, PKCE, consent over HTTP,
 * validateAuthResponse (state + iss), code exchange, refresh, revocation,
 * then the API's 401.
 */
t.test('oauth4webapi completes sign-in, refresh and revocation with no special casing', async (t) => {
  const b = await build(t, { listen: true })
  const BASE = b.base

  // RFC 9728, then RFC 8414
  const rsUrl = new URL(`${BASE}/api/env`)
  const rs = await oauth.resourceDiscoveryRequest(rsUrl, insecure).then((r) => oauth.processResourceDiscoveryResponse(rsUrl, r))
  t.equal(rs.resource, `${BASE}/api/env`)
  const issuer = new URL(rs.authorization_servers![0]!)
  const as = await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }).then((r) => oauth.processDiscoveryResponse(issuer, r))
  t.equal(as.issuer, BASE, 'issuer is the base URL exactly')
  t.equal(rs.authorization_servers![0], as.issuer, 'PRM names the same issuer string')

  const client: oauth.Client = { client_id: `${BASE}/cli/oauth-client.json` }
  const clientAuth = oauth.None()
  const code_verifier = oauth.generateRandomCodeVerifier()
  const code_challenge = await oauth.calculatePKCECodeChallenge(code_verifier)
  const state = oauth.generateRandomState()
  const REDIRECT = 'http://127.0.0.1:53682/callback'
  const authUrl = new URL(as.authorization_endpoint!)
  authUrl.search = new URLSearchParams({
    response_type: 'code',
    client_id: client.client_id,
    redirect_uri: REDIRECT,
    code_challenge,
    code_challenge_method: 'S256',
    state,
    resource: `${BASE}/api/env`,
    scope: 'env:read env:push',
  }).toString()

  // the browser: not signed in → sign-in page, returning to this request
  const anonymous = await fetch(authUrl, { redirect: 'manual' })
  t.equal(anonymous.status, 303)
  const signInAt = new URL(anonymous.headers.get('location')!, BASE)
  t.equal(signInAt.pathname, '/login')
  const back = signInAt.searchParams.get('return_to')!
  t.match(back, /^\/oauth\/authorize\?/)
  t.equal(new URLSearchParams(back.split('?')[1]).get('state'), state, 'the return path carries the request')

  // signed in → consent page
  const person = `test_person=${PEOPLE.ada!.id}`
  const page = await fetch(new URL(back, BASE), { redirect: 'manual', headers: { cookie: person } })
  t.equal(page.status, 200)
  const html = await page.text()
  t.match(html, 'Allow this sign-in to send .env files')
  const form = parseConsentForm(html)
  const post = await fetch(new URL(form.action, BASE), {
    method: 'POST',
    redirect: 'manual',
    headers: {
      cookie: `${person}; ${cookiesOf(page.headers.getSetCookie())}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams({ ...form.fields, decision: 'allow', allow_push: 'yes' }),
  })
  t.equal(post.status, 303, 'consent answers 303, never 307')
  const cb = new URL(post.headers.get('location')!)
  t.equal(`${cb.origin}${cb.pathname}`, REDIRECT, 'back to the exact redirect URI')
  t.equal(cb.searchParams.get('iss'), as.issuer, 'iss === metadata issuer')

  const params = oauth.validateAuthResponse(as, client, cb, state)
  const res = await oauth.authorizationCodeGrantRequest(as, client, clientAuth, params, REDIRECT, code_verifier, {
    additionalParameters: { resource: `${BASE}/api/env` },
    ...insecure,
  })
  t.equal(res.headers.get('cache-control'), 'no-store')
  t.equal(res.headers.get('pragma'), 'no-cache')
  const tokens = await oauth.processAuthorizationCodeResponse(as, client, res)
  t.match(tokens.access_token, /^ekat_[A-Za-z0-9_-]{43}$/)
  t.match(tokens.refresh_token!, /^ekrt_[A-Za-z0-9_-]{43}$/)
  t.equal(tokens.expires_in, 3600)
  t.equal(tokens.token_type, 'bearer')
  t.equal(tokens.scope, 'env:read env:push')

  // the API accepts it
  const api1 = await oauth.protectedResourceRequest(tokens.access_token, 'GET', new URL(`${BASE}/api/env/vaults`), undefined, undefined, insecure)
  t.equal(api1.status, 200, 'the API accepts the access token')

  // refresh rotates
  const r2 = await oauth.refreshTokenGrantRequest(as, client, clientAuth, tokens.refresh_token!, {
    additionalParameters: { resource: `${BASE}/api/env` },
    ...insecure,
  })
  const tokens2 = await oauth.processRefreshTokenResponse(as, client, r2)
  t.not(tokens2.refresh_token, tokens.refresh_token, 'a new refresh token')
  t.match(tokens2.refresh_token!, /^ekrt_/)
  t.not(tokens2.access_token, tokens.access_token)
  t.equal(tokens2.expires_in, 3600)
  t.equal(tokens2.scope, tokens.scope, 'same scope')

  // revoke the refresh token: the whole sign-in ends
  await oauth.processRevocationResponse(await oauth.revocationRequest(as, client, clientAuth, tokens2.refresh_token!, insecure))
  const api2 = await fetch(`${BASE}/api/env/vaults`, { headers: { authorization: `Bearer ${tokens2.access_token}` } })
  t.equal(api2.status, 401, 'the API refuses the revoked sign-in')
  t.equal(api2.headers.get('www-authenticate'), `Bearer realm="envkeep", resource_metadata="${BASE}/.well-known/oauth-protected-resource/api/env"`)
  t.match(await api2.json(), { error: 'invalid_token' })
  const challenge = await oauth.protectedResourceRequest(tokens2.access_token, 'GET', new URL(`${BASE}/api/env/vaults`), undefined, undefined, insecure).then(
    () => null,
    (e: unknown) => e,
  )
  t.ok(challenge instanceof oauth.WWWAuthenticateChallengeError, 'oauth4webapi sees the challenge')
  if (challenge instanceof oauth.WWWAuthenticateChallengeError) {
    t.equal(challenge.cause[0]?.parameters.resource_metadata, `${BASE}/.well-known/oauth-protected-resource/api/env`)
  }
  const r3 = await oauth.refreshTokenGrantRequest(as, client, clientAuth, tokens2.refresh_token!, {
    additionalParameters: { resource: `${BASE}/api/env` },
    ...insecure,
  })
  const refused = await oauth.processRefreshTokenResponse(as, client, r3).then(
    () => null,
    (e: unknown) => e,
  )
  t.ok(refused instanceof oauth.ResponseBodyError && refused.error === 'invalid_grant', 'refresh after revocation: invalid_grant')

  // no token reached the log
  const log = b.logs.join('\n')
  for (const secret of [tokens.access_token, tokens.refresh_token!, tokens2.access_token, tokens2.refresh_token!, params.get('code')!, code_verifier]) {
    t.notOk(log.includes(secret), 'a token or code in the log')
  }
})

t.test('oauth4webapi rejects a callback with a wrong state or iss (the server sends both)', async (t) => {
  const b = await build(t, { listen: true })
  const as = await oauth.discoveryRequest(new URL(b.base), { algorithm: 'oauth2', ...insecure }).then((r) => oauth.processDiscoveryResponse(new URL(b.base), r))
  const client: oauth.Client = { client_id: b.cli }
  const good = new URL(`http://127.0.0.1:5/callback?code=x&state=s1&iss=${encodeURIComponent(b.base)}`)
  t.ok(oauth.validateAuthResponse(as, client, good, 's1'))
  t.throws(() => oauth.validateAuthResponse(as, client, good, 's2'))
  const slash = new URL(`http://127.0.0.1:5/callback?code=x&state=s1&iss=${encodeURIComponent(`${b.base}/`)}`)
  t.throws(() => oauth.validateAuthResponse(as, client, slash, 's1'))
})

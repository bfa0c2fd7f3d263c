import t, { type Test } from 'tap'
import { randomUUID } from 'node:crypto'
import { createPublicKey } from 'node:crypto'
import { SignJWT } from 'jose'
import { startOidcIssuer, type TestOidcIssuer } from '@envkeep/test-support'
import { build, BASE_URL, CLI_CLIENT, RESOURCE, expectError, type Built } from '../api/helpers.js'
import { testLogEntry } from '../../src/testing/index.js'
import type { NewCiIdentity } from '../../src/index.js'

const GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange'
const JWT_TYPE = 'urn:ietf:params:oauth:token-type:jwt'
const AUD = 'https://envkeep.example'
const SUB = 'repo:acme/shop:ref:refs/heads/main'
const REFUSED = 'the subject token was refused or matches no CI identity'
const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url')

interface Setup {
  b: Built
  idp: TestOidcIssuer
  vaultId: string
  identityId: string
  exchange(token: string, extra?: Record<string, string>): Promise<import('fastify').LightMyRequestResponse>
}

async function setup(t: Test, over: Partial<NewCiIdentity> = {}): Promise<Setup> {
  const b = await build(t, { extra: { ciAllowHttpLoopbackIssuers: true } })
  b.clock.now = new Date() // the issuer signs with the real clock (set again once set up: a slow machine takes seconds)
  const idp = await startOidcIssuer()
  t.teardown(() => idp.close())
  const vaultId = await b.createVault('owner-1', { name: 'shop' })
  await b.setValues(vaultId, 'development', { DB_URL: 'postgres://dev', API_KEY: 'dev-key' })
  await b.setValues(vaultId, 'production', { DB_URL: 'postgres://prod-secret' })
  const identityId = randomUUID()
  const r = await b.storage.changeCiIdentity(
    {
      kind: 'create',
      identity: {
        id: identityId,
        vaultId,
        name: 'deploy',
        issuer: idp.issuer,
        audience: AUD,
        subjectPattern: 'repo:acme/shop:*',
        requiredClaims: { ref: 'refs/heads/main' },
        role: 'owner',
        environments: ['development'],
        now: b.clock.now,
        ...over,
      },
    },
    testLogEntry({ vaultId, action: 'member_added', subject: `ci:${identityId}`, detail: 'owner' }),
  )
  t.ok(r.ok, 'identity created')
  const exchange = (token: string, extra: Record<string, string> = {}) =>
    b.app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({
        grant_type: GRANT,
        subject_token: token,
        subject_token_type: JWT_TYPE,
        client_id: CLI_CLIENT,
        resource: RESOURCE,
        ...extra,
      }).toString(),
    })
  b.clock.now = new Date()
  return { b, idp, vaultId, identityId, exchange }
}

const claims = { sub: SUB, aud: AUD, ref: 'refs/heads/main', run_id: '1234' }

/** One more CI identity for the setup's issuer and subjects, in `vaultId`, added by `personId` (null: the administrator). */
async function addIdentity(
  s: Pick<Setup, 'b' | 'idp'>,
  vaultId: string,
  o: { name: string; audience?: string; role?: 'editor' | 'owner'; personId?: string | null },
): Promise<string> {
  const id = randomUUID()
  const role = o.role ?? 'owner'
  const made = await s.b.storage.changeCiIdentity(
    {
      kind: 'create',
      identity: {
        id,
        vaultId,
        name: o.name,
        issuer: s.idp.issuer,
        audience: o.audience ?? AUD,
        subjectPattern: 'repo:acme/shop:*',
        requiredClaims: {},
        role,
        environments: null,
        now: s.b.clock.now,
      },
    },
    testLogEntry({ vaultId, action: 'member_added', personId: o.personId ?? null, subject: `ci:${id}`, detail: role }),
  )
  if (!made.ok) throw new Error('the identity was not created')
  return id
}

t.test('a CI identity token becomes an env:read access token: vault list, read, log', async (t) => {
  const { b, idp, vaultId, identityId, exchange } = await setup(t)
  const jwt = await idp.sign(claims)
  const res = await exchange(jwt)
  t.equal(res.statusCode, 200, res.body)
  t.equal(res.headers['cache-control'], 'no-store')
  const body = res.json() as Record<string, unknown>
  t.match(body.access_token, /^ekat_[A-Za-z0-9_-]{43}$/)
  t.equal(body.token_type, 'Bearer')
  t.equal(body.issued_token_type, 'urn:ietf:params:oauth:token-type:access_token')
  t.equal(body.scope, 'env:read')
  t.notOk('refresh_token' in body, 'no refresh token')
  t.same(body.envkeep_ci_identity, { name: 'deploy', vault_id: vaultId }, 'names the CI identity (issue 25)')
  t.ok((body.expires_in as number) <= 300 && (body.expires_in as number) > 0, 'never past the JWT exp (5 minutes here)')
  const token = body.access_token as string

  const vaults = await b.get('/api/env/vaults', token)
  t.same(vaults.json(), { vaults: [{ id: vaultId, name: 'shop', role: 'owner', environments: ['development'] }] }, 'only its vault, only its environments')
  const read = await b.get(`/api/env/${vaultId}/development`, token)
  t.equal(read.statusCode, 200)
  t.same(read.json().variables, { API_KEY: 'dev-key', DB_URL: 'postgres://dev' })
  const [entry] = await b.storage.listAccessLog(vaultId, { limit: 1 })
  t.equal(entry?.action, 'read')
  t.equal(entry?.personId, `ci:${identityId}`)
  t.match(entry?.detail, /^deploy: sub=repo:acme\/shop:ref:refs\/heads\/main run_id=1234$/, 'logged with the identity, subject and run')

  const prod = await b.get(`/api/env/${vaultId}/production`, token)
  expectError(t, prod, 403, 'forbidden', 'database (your role)', { vault: vaultId, message: /limited to development/ })
  const [refused] = await b.storage.listAccessLog(vaultId, { limit: 1 })
  t.equal(refused?.action, 'refused', 'the refusal is logged')

  const push = await b.push(vaultId, 'development', token, { variables: { X: 'y' } })
  expectError(t, push, 403, 'push_not_allowed', 'env API')

  const other = await b.createVault('owner-2', { name: 'other' })
  t.equal((await b.get(`/api/env/${other}/development`, token)).statusCode, 404, 'another vault is not reachable')

  // no refresh token exists; the access token is not one
  const refresh = await b.app.inject({
    method: 'POST',
    url: '/oauth/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: token, client_id: CLI_CLIENT, resource: RESOURCE }).toString(),
  })
  t.equal(refresh.json().error, 'invalid_grant', 'a refresh attempt fails')
})

t.test('ES256 tokens exchange too; the metadata lists the grant', async (t) => {
  const { b, idp, exchange } = await setup(t)
  const es = await idp.addKey('ES256')
  t.equal((await exchange(await idp.sign(claims, es))).statusCode, 200)
  const meta = await b.app.inject({ method: 'GET', url: '/.well-known/oauth-authorization-server' })
  t.ok((meta.json().grant_types_supported as string[]).includes(GRANT))
})

t.test('every refusal is the same invalid_grant; the reason is only in the log', async (t) => {
  const { b, idp, exchange } = await setup(t)
  const now = Math.floor(Date.now() / 1000)
  const hidden = await idp.addKey('RS256', { publish: false })
  const other = await startOidcIssuer()
  t.teardown(() => other.close())
  const good = await idp.sign(claims)
  const [h, p, s] = good.split('.') as [string, string, string]
  const rsa = idp.keys[0]!
  const pem = createPublicKey({ key: rsa.publicJwk as never, format: 'jwk' }).export({ type: 'spki', format: 'pem' })
  const hs256 = await new SignJWT({ ...claims, iss: idp.issuer, iat: now, exp: now + 300 })
    .setProtectedHeader({ alg: 'HS256', kid: rsa.kid })
    .sign(new TextEncoder().encode(String(pem)))

  const rows: [string, string | Promise<string>, string][] = [
    ['wrong audience', idp.sign({ ...claims, aud: 'https://elsewhere.example' }), 'match no CI identity'],
    ['wrong issuer (one no identity trusts)', other.sign(claims), 'no CI identity trusts this issuer'],
    ['expired', idp.sign({ ...claims, iat: now - 900, exp: now - 120 }), 'ERR_JWT_EXPIRED'],
    ['not yet valid', idp.sign({ ...claims, nbf: now + 300, exp: now + 900 }), 'ERR_JWT_CLAIM_VALIDATION_FAILED'],
    ['bad signature', `${h}.${p}.${(s[0] === 'A' ? 'B' : 'A') + s.slice(1)}`, 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED'],
    ['alg none', `${b64({ alg: 'none', typ: 'JWT' })}.${p}.`, 'verification failed'],
    ['HS256 signed with the public key', hs256, 'verification failed'],
    ['unknown kid', idp.sign(claims, hidden), 'ERR_JWKS_NO_MATCHING_KEY'],
    ['a subject that matches no identity', idp.sign({ ...claims, sub: 'repo:acme/other:ref:refs/heads/main' }), 'match no CI identity'],
    ['a required claim missing', idp.sign({ sub: SUB, aud: AUD }), 'match no CI identity'],
    ['a required claim with another value', idp.sign({ ...claims, ref: 'refs/heads/evil' }), 'match no CI identity'],
    ['not a JWT at all', 'not-a-jwt', 'not a JWT'],
  ]
  const fetchesBefore = other.fetches.discovery
  for (const [name, tokenP, reason] of rows) {
    const token = await tokenP
    b.logs.length = 0
    const res = await exchange(token)
    t.equal(res.statusCode, 400, `${name}: 400`)
    const body = res.json() as Record<string, string>
    t.equal(body.error, 'invalid_grant', `${name}: invalid_grant`)
    t.equal(body.error_description, REFUSED, `${name}: the same description`)
    t.equal(body.where, 'OAuth')
    const line = b.logs.find((l) => l.includes(body.ref as string)) ?? ''
    t.ok(line.includes(reason), `${name}: the log says why under the ref`)
    t.notOk(line.includes(token.slice(-20)) || b.logs.join('').includes(token.slice(-20)), `${name}: the token is not logged`)
  }
  t.equal(other.fetches.discovery, fetchesBefore, 'an issuer no identity trusts is never contacted')
})

t.test('the same JWT is exchanged once, also when two exchanges race', async (t) => {
  const { idp, exchange } = await setup(t)
  const jwt = await idp.sign(claims)
  t.equal((await exchange(jwt)).statusCode, 200)
  const again = await exchange(jwt)
  t.equal(again.json().error, 'invalid_grant', 'the second exchange is refused')
  const racing = await idp.sign(claims)
  const results = await Promise.all([exchange(racing), exchange(racing), exchange(racing)])
  t.equal(results.filter((r) => r.statusCode === 200).length, 1, 'exactly one of three racing exchanges wins')
})

t.test('removing the identity ends its live token at once', async (t) => {
  const { b, idp, vaultId, identityId, exchange } = await setup(t)
  const token = (await exchange(await idp.sign(claims))).json().access_token as string
  t.equal((await b.get(`/api/env/${vaultId}/development`, token)).statusCode, 200)
  await b.storage.changeCiIdentity(
    { kind: 'remove', vaultId, id: identityId, now: b.clock.now },
    testLogEntry({ vaultId, action: 'member_removed', subject: `ci:${identityId}` }),
  )
  const after = await b.get(`/api/env/${vaultId}/development`, token)
  t.equal(after.statusCode, 401, 'refused on the very next request')
})

t.test('requests that are not a valid exchange are refused before any token is looked at', async (t) => {
  const { idp, exchange } = await setup(t)
  const jwt = await idp.sign(claims)
  const cases: [string, Record<string, string>, string][] = [
    ['another client', { client_id: 'https://evil.example/client.json' }, 'invalid_client'],
    ['another resource', { resource: `${BASE_URL}/mcp` }, 'invalid_target'],
    ['another subject token type', { subject_token_type: 'urn:ietf:params:oauth:token-type:access_token' }, 'invalid_request'],
    ['an actor token', { actor_token: jwt, actor_token_type: JWT_TYPE }, 'invalid_request'],
    ['the push scope', { scope: 'env:read env:push' }, 'invalid_scope'],
    ['a refresh token asked for', { requested_token_type: 'urn:ietf:params:oauth:token-type:refresh_token' }, 'invalid_request'],
  ]
  for (const [name, extra, error] of cases) {
    const res = await exchange(jwt, extra)
    t.equal(res.json().error, error, name)
  }
  t.equal((await exchange(jwt)).statusCode, 200, 'none of those consumed the JWT')
})

t.test('an identity with no environment list reads every environment its role reads', async (t) => {
  const { b, idp, vaultId, exchange } = await setup(t, { environments: null, role: 'editor' })
  const token = (await exchange(await idp.sign(claims))).json().access_token as string
  t.same((await b.get('/api/env/vaults', token)).json().vaults[0].environments, ['development', 'preview'], 'an editor: not production')
  t.equal((await b.get(`/api/env/${vaultId}/production`, token)).statusCode, 403)
})

t.test('a JWT is exchanged once however its encoding is changed: padding bits, whitespace, a high-S ES256 signature', async (t) => {
  const { idp, exchange } = await setup(t)
  const es = await idp.addKey('ES256')
  const noJti = { ...claims, jti: undefined }
  // the spare low bits of the last base64url character decode to the same bytes
  const spareBits = (segment: string): string => {
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
    const last = alphabet.indexOf(segment.at(-1) as string)
    return segment.slice(0, -1) + (alphabet[last ^ 1] as string)
  }
  // ES256: s and n - s are both valid signatures of the same payload
  const N = BigInt('0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551')
  const highS = (jwt: string): string => {
    const [h, p, s] = jwt.split('.') as [string, string, string]
    const sig = Buffer.from(s, 'base64url')
    const low = BigInt(`0x${sig.subarray(32).toString('hex')}`)
    const flipped = Buffer.from((N - low).toString(16).padStart(64, '0'), 'hex')
    return `${h}.${p}.${Buffer.concat([sig.subarray(0, 32), flipped]).toString('base64url')}`
  }
  for (const [name, signWith, variant] of [
    ['spare bits of the signature', undefined, (jwt: string) => jwt.replace(/[^.]+$/, (s) => spareBits(s))],
    ['a high-S ES256 signature', es, highS],
  ] as const) {
    const jwt = await idp.sign({ ...noJti, run_id: name }, signWith)
    t.equal((await exchange(jwt)).statusCode, 200, `${name}: the first exchange`)
    const changed = variant(jwt)
    t.not(changed, jwt, `${name}: another string`)
    const again = await exchange(changed)
    t.equal(again.json().error, 'invalid_grant', `${name}: the changed token is refused as a replay`)
  }
  const spaced = await idp.sign({ ...noJti, run_id: 'spaced' })
  t.equal((await exchange(spaced)).statusCode, 200)
  for (const changed of [`${spaced}\n`, ` ${spaced}`, spaced.replace('.', '.\n')]) {
    const again = await exchange(changed)
    t.equal(again.statusCode, 400, 'whitespace in or around it: refused')
    t.equal(again.json().error, 'invalid_grant', 'as a replay or as no JWT')
  }
})

t.test("another vault's identity for the same issuer, audience and subject does not break this vault's CI when the exchange names the vault", async (t) => {
  const { b, idp, vaultId, identityId, exchange } = await setup(t)
  const evilVault = await b.createVault('owner-2', { name: 'evil' })
  const sameName = await b.createVault('owner-3', { name: 'shop' })
  await addIdentity({ b, idp }, evilVault, { name: 'broad' })
  await addIdentity({ b, idp }, sameName, { name: 'copycat' })
  const byId = await exchange(await idp.sign({ ...claims, run_id: 'by-id' }), { vault: vaultId })
  t.equal(byId.statusCode, 200, 'naming the vault by id: its own identity')
  const vaults = await b.get('/api/env/vaults', byId.json().access_token)
  t.same(
    vaults.json().vaults.map((v: { id: string }) => v.id),
    [vaultId],
    'the token reaches the named vault only',
  )
  await b.get(`/api/env/${vaultId}/development`, byId.json().access_token)
  const [entry] = await b.storage.listAccessLog(vaultId, { limit: 1 })
  t.equal(entry?.personId, `ci:${identityId}`, 'read as its own identity')

  const evilToken = await exchange(await idp.sign({ ...claims, run_id: 'evil' }), { vault: evilVault })
  t.equal(evilToken.statusCode, 200, "the other vault's identity works for its own vault")
  t.same(
    (await b.get('/api/env/vaults', evilToken.json().access_token)).json().vaults.map((v: { id: string }) => v.id),
    [evilVault],
  )

  const byName = await exchange(await idp.sign({ ...claims, run_id: 'by-name' }), { vault: 'shop' })
  t.equal(byName.json().error, 'invalid_grant', 'a name two matching vaults share is refused: give the id')
  const unnamed = await exchange(await idp.sign({ ...claims, run_id: 'unnamed' }))
  t.equal(unnamed.json().error, 'invalid_grant', 'naming no vault while identities of several vaults match: refused')
  const elsewhere = await exchange(await idp.sign({ ...claims, run_id: 'elsewhere' }), { vault: randomUUID() })
  t.equal(elsewhere.json().error, 'invalid_grant', 'a vault no matching identity belongs to: refused')
  const bad = await exchange(await idp.sign({ ...claims, run_id: 'bad' }), { vault: 'x'.repeat(300) })
  t.equal(bad.json().error, 'invalid_request', 'an over-long vault parameter: invalid_request')
})

t.test('the vault may be named by its name when that name is not ambiguous', async (t) => {
  const { b, idp, vaultId, exchange } = await setup(t)
  await addIdentity({ b, idp }, await b.createVault('owner-2', { name: 'evil' }), { name: 'broad' })
  const res = await exchange(await idp.sign(claims), { vault: 'SHOP' })
  t.equal(res.statusCode, 200, res.body)
  t.same(
    (await b.get('/api/env/vaults', res.json().access_token)).json().vaults.map((v: { id: string }) => v.id),
    [vaultId],
  )
})

t.test('an identity whose adder is no longer an owner of its vault (by any path) never signs in again', async (t) => {
  const { b, idp, vaultId, exchange } = await setup(t)
  // added by owner-1 (an owner): signs in
  await addIdentity({ b, idp }, vaultId, { name: 'by-owner', audience: 'https://other-audience.example', role: 'editor', personId: 'owner-1' })
  const other = { ...claims, aud: 'https://other-audience.example' }
  t.equal((await exchange(await idp.sign(other))).statusCode, 200, 'its adder is an owner')
  // added by someone who is not (or no longer) an owner of the vault
  await addIdentity({ b, idp }, vaultId, { name: 'stale', audience: 'https://stale.example', role: 'editor', personId: 'person-who-left' })
  b.logs.length = 0
  const res = await exchange(await idp.sign({ ...claims, aud: 'https://stale.example' }))
  t.equal(res.json().error, 'invalid_grant')
  t.ok(
    b.logs.some((l) => l.includes(res.json().ref) && l.includes('no longer an owner')),
    'the log says why',
  )
})

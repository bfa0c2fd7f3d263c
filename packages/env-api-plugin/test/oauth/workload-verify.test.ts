import t, { type Test } from 'tap'
import { createPublicKey } from 'node:crypto'
import { createServer, type ServerResponse } from 'node:http'
import { createServer as createNetServer, type AddressInfo } from 'node:net'
import { generateKeyPair, SignJWT } from 'jose'
import { startOidcIssuer } from '@envkeep/test-support'
import { createSubjectTokenVerifier, SubjectTokenRefused, audiences } from '../../src/oauth/workload/verify-subject-token.js'
import { issuerProblem } from '../../src/oauth/workload/issuer-url.js'
import { subjectMatches, subjectPatternProblem } from '../../src/oauth/workload/subject-pattern.js'

const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url')

t.test('subject patterns: exact, or * over the whole sub', async (t) => {
  const rows: [string, string, boolean][] = [
    ['repo:acme/shop:ref:refs/heads/main', 'repo:acme/shop:ref:refs/heads/main', true],
    ['repo:acme/shop:ref:refs/heads/main', 'repo:acme/shop:ref:refs/heads/main2', false],
    ['repo:acme/shop:*', 'repo:acme/shop:ref:refs/heads/dev', true],
    ['repo:acme/shop:*', 'repo:acme/shopping:ref:refs/heads/dev', false],
    ['repo:acme/*:environment:production', 'repo:acme/api:environment:production', true],
    ['repo:acme/*:environment:production', 'repo:acme/api:environment:production-copy', false],
    ['repo:acme/*:environment:production', 'repo:evil/x:repo:acme/y:environment:production', false],
    ['*:ref:refs/heads/main', 'project_path:g/p:ref:refs/heads/main', true],
    ['a*b*c', 'abc', true],
    ['a*b*c', 'ab', false],
    ['a*a', 'a', false],
    ['a.b', 'aXb', false], // a dot is literal, not a regex
  ]
  for (const [p, s, want] of rows) t.equal(subjectMatches(p, s), want, `${p} vs ${s}`)
  t.ok(subjectPatternProblem('*'), 'a bare * is refused')
  t.ok(subjectPatternProblem(''), 'empty is refused')
  // a vault cannot claim subjects by wildcard alone: the repository or project is written out before any *
  for (const refused of [
    'repo:acme/*',
    'repo:*',
    'repo:*/shop:*',
    '*:ref:refs/heads/main',
    'repo:acme*',
    'project_path:group/*',
    'project_path:*:ref_type:branch',
    'anything*',
    'repo:/shop:*',
    'repo:acme/:*',
  ])
    t.match(subjectPatternProblem(refused), /repository or project/, `${refused}: refused`)
  for (const kept of [
    'repo:acme/shop:*',
    'repo:acme/shop:ref:refs/heads/*',
    'project_path:group/sub/project:ref_type:branch:ref:*',
    'system:serviceaccount:ns:*',
    'repo:acme/shop',
    'exact-subject-no-wildcard',
  ])
    t.equal(subjectPatternProblem(kept), null, `${kept}: kept`)
})

t.test('issuers: https only; http://127.0.0.1 only when allowed', async (t) => {
  t.equal(issuerProblem('https://token.actions.githubusercontent.com', false), null)
  t.ok(issuerProblem('http://127.0.0.1:8080', false))
  t.equal(issuerProblem('http://127.0.0.1:8080', true), null)
  t.ok(issuerProblem('http://localhost:8080', true), 'only the loopback address, not a name')
  t.ok(issuerProblem('http://10.0.0.1', true))
  t.ok(issuerProblem('https://x.example/', false), 'a trailing slash is refused')
  t.ok(issuerProblem('https://u:p@x.example', false))
  t.ok(issuerProblem('file:///etc/passwd', true))
  for (const address of ['https://169.254.169.254', 'https://127.0.0.1:8443', 'https://[::1]', 'https://10.1.2.3', 'https://[::ffff:192.168.0.1]'])
    t.match(issuerProblem(address, true), /public address/, `${address}: refused when added`)
  t.equal(issuerProblem('https://140.82.112.3', false), null, 'a public address is fine')
})

t.test('the verifier against a real issuer on 127.0.0.1', async (t) => {
  const idp = await startOidcIssuer()
  t.teardown(() => idp.close())
  const es = await idp.addKey('ES256')
  const verifier = createSubjectTokenVerifier({ now: () => new Date(), allowHttpLoopback: true })
  const now = Math.floor(Date.now() / 1000)
  const base = { sub: 'repo:acme/shop:ref:refs/heads/main', aud: 'https://envkeep.example' }

  const refused = async (token: string, why: string, issuer = idp.issuer) => t.rejects(verifier.verify(token, issuer), SubjectTokenRefused, why)

  const ok = await verifier.verify(await idp.sign(base), idp.issuer)
  t.equal(ok.sub, base.sub, 'RS256 verifies')
  t.same(audiences(ok), ['https://envkeep.example'])
  t.equal((await verifier.verify(await idp.sign(base, es), idp.issuer)).sub, base.sub, 'ES256 verifies')
  t.equal(idp.fetches.discovery, 1, 'discovery is cached')
  t.equal(idp.fetches.jwks, 1, 'the JWKS is cached')

  t.equal(verifier.peekIssuer(await idp.sign(base)), idp.issuer)
  t.throws(() => verifier.peekIssuer('not.a.jwt'), SubjectTokenRefused)

  await refused(await idp.sign({ ...base, iss: 'https://other.example' }), 'another iss')
  await refused(await idp.sign({ ...base, exp: now - 61, iat: now - 400 }), 'expired beyond the skew')
  t.ok(await verifier.verify(await idp.sign({ ...base, exp: now - 30, iat: now - 400 }), idp.issuer), 'expired within 60 s of skew passes')
  await refused(await idp.sign({ ...base, nbf: now + 120 }), 'not yet valid')
  await refused(await idp.sign({ ...base, iat: now + 120, exp: now + 600 }), 'issued in the future')
  await refused(await idp.sign({ aud: base.aud }), 'no sub')
  await refused(await idp.sign({ sub: base.sub }), 'no aud')

  const good = await idp.sign(base)
  const [h, p, s] = good.split('.') as [string, string, string]
  const flipped = (s[0] === 'A' ? 'B' : 'A') + s.slice(1)
  await refused(`${h}.${p}.${flipped}`, 'bad signature')
  await refused(`${h}.${b64({ ...JSON.parse(Buffer.from(p, 'base64url').toString()), sub: 'repo:evil/x' })}.${s}`, 'payload changed after signing')
  await refused(`${b64({ alg: 'none', typ: 'JWT' })}.${p}.`, 'alg none')

  // HS256 "signed" with the issuer's public key (algorithm confusion)
  const rsa = idp.keys[0]!
  const pem = createPublicKey({ key: rsa.publicJwk as never, format: 'jwk' }).export({ type: 'spki', format: 'pem' })
  const hs = await new SignJWT({ ...base, iss: idp.issuer, iat: now, exp: now + 300 })
    .setProtectedHeader({ alg: 'HS256', kid: rsa.kid })
    .sign(new TextEncoder().encode(String(pem)))
  await refused(hs, 'HS256 with the public key')

  // an unknown kid: the JWKS is fetched once more, then the token is refused
  const jwksBefore = idp.fetches.jwks
  const hiddenKey = await idp.addKey('RS256', { publish: false })
  await refused(await idp.sign(base, hiddenKey), 'unknown kid')
  t.equal(idp.fetches.jwks, jwksBefore + 1, 'an unknown kid refreshes the JWKS once')
  await refused(await idp.sign(base, hiddenKey), 'unknown kid again')
  t.equal(idp.fetches.jwks, jwksBefore + 1, 'and not again within the cool-down')

  // a plain-http issuer is refused without the loopback allowance, before any fetch
  const strict = createSubjectTokenVerifier({ now: () => new Date(), allowHttpLoopback: false })
  const d = idp.fetches.discovery
  await t.rejects(strict.verify(await idp.sign(base), idp.issuer), SubjectTokenRefused)
  t.equal(idp.fetches.discovery, d, 'nothing fetched from a refused issuer')
})

t.test('a rotated key is found by fetching the JWKS again', async (t) => {
  const idp = await startOidcIssuer()
  t.teardown(() => idp.close())
  const verifier = createSubjectTokenVerifier({ now: () => new Date(), allowHttpLoopback: true })
  const claims = { sub: 's', aud: 'a' }
  await verifier.verify(await idp.sign(claims), idp.issuer)
  const rotated = await idp.addKey('ES256')
  t.equal((await verifier.verify(await idp.sign(claims, rotated), idp.issuer)).sub, 's')
  t.equal(idp.fetches.jwks, 2)
})

/** An issuer on 127.0.0.1 whose discovery names `jwksUri(issuer)` and whose JWKS answer is `jwks`. */
async function hostileIssuer(t: Test, o: { jwksUri?: (issuer: string) => string; hugeJwks?: boolean; hugeDiscovery?: boolean }) {
  const sent = { jwks: 0, discovery: 0 }
  let issuer = ''
  const flood = (res: ServerResponse, key: 'jwks' | 'discovery') => {
    res.writeHead(200, { 'content-type': 'application/json' })
    const chunk = Buffer.alloc(64 * 1024, 0x20)
    const more = () => {
      while (sent[key] < 32 * 1024 * 1024) {
        sent[key] += chunk.length
        if (!res.write(chunk)) return void res.once('drain', more)
      }
      res.end()
    }
    res.on('close', () => res.removeAllListeners('drain'))
    more()
  }
  const server = createServer((req, res) => {
    if (req.url === '/.well-known/openid-configuration') {
      if (o.hugeDiscovery) return flood(res, 'discovery')
      res.writeHead(200, { 'content-type': 'application/json' })
      return res.end(JSON.stringify({ issuer, jwks_uri: o.jwksUri ? o.jwksUri(issuer) : `${issuer}/jwks` }))
    }
    if (req.url === '/jwks' && o.hugeJwks) return flood(res, 'jwks')
    res.writeHead(404).end()
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise<void>((r) => server.close(() => r())))
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const { privateKey } = await generateKeyPair('ES256')
  const now = Math.floor(Date.now() / 1000)
  const token = await new SignJWT({ iss: issuer, sub: 'repo:acme/shop:ref:refs/heads/main', aud: 'x', iat: now, exp: now + 300 })
    .setProtectedHeader({ alg: 'ES256', kid: 'k' })
    .sign(privateKey)
  return { issuer, token, sent }
}

/** A TCP listener on 127.0.0.1 that counts connections (a service an issuer URL must never reach). */
async function loopbackService(t: Test) {
  const seen = { connections: 0 }
  const server = createNetServer((socket) => {
    seen.connections++
    socket.destroy()
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise<void>((r) => server.close(() => r())))
  return { port: (server.address() as AddressInfo).port, seen }
}

t.test('a JWKS or discovery document past 256 KiB is refused, and reading stops there', async (t) => {
  const verifier = createSubjectTokenVerifier({ now: () => new Date(), allowHttpLoopback: true })
  for (const which of ['jwks', 'discovery'] as const) {
    const idp = await hostileIssuer(t, which === 'jwks' ? { hugeJwks: true } : { hugeDiscovery: true })
    const err = await verifier.verify(idp.token, idp.issuer).catch((e: unknown) => e)
    t.ok(err instanceof SubjectTokenRefused, `${which}: refused`)
    t.match((err as Error).message, /over 262144 bytes/, `${which}: because of its size`)
    t.ok(idp.sent[which] < 8 * 1024 * 1024, `${which}: the server could send ${idp.sent[which]} of 32 MiB before we hung up`)
  }
})

t.test('issuers and jwks_uri leading to loopback, private or link-local addresses are refused before any connection', async (t) => {
  const svc = await loopbackService(t)
  const strict = createSubjectTokenVerifier({ now: () => new Date(), allowHttpLoopback: false, fetchTimeoutMs: 3000 })
  const { privateKey } = await generateKeyPair('ES256')
  const now = Math.floor(Date.now() / 1000)
  for (const issuer of [
    `https://localhost:${svc.port}`,
    `https://127.0.0.1:${svc.port}`,
    `https://[::1]:${svc.port}`,
    'https://169.254.169.254',
    'https://10.0.0.1',
  ]) {
    const token = await new SignJWT({ iss: issuer, sub: 's', aud: 'x', iat: now, exp: now + 300 }).setProtectedHeader({ alg: 'ES256' }).sign(privateKey)
    const err = await strict.verify(token, issuer).catch((e: unknown) => e)
    t.ok(err instanceof SubjectTokenRefused, `${issuer}: refused`)
    t.match(String((err as Error & { cause?: unknown }).message), /public address|private, loopback or link-local/, `${issuer}: as an address we never call`)
  }
  // the loopback test issuer is allowed by ENVKEEP_CI_ALLOW_HTTP_ISSUERS=loopback; what its discovery names is not
  const loose = createSubjectTokenVerifier({ now: () => new Date(), allowHttpLoopback: true, fetchTimeoutMs: 3000 })
  for (const jwksUri of [`https://localhost:${svc.port}/jwks`, 'https://169.254.169.254/latest/meta-data', `https://[::ffff:127.0.0.1]:${svc.port}/jwks`]) {
    const idp = await hostileIssuer(t, { jwksUri: () => jwksUri })
    const err = await loose.verify(idp.token, idp.issuer).catch((e: unknown) => e)
    t.ok(err instanceof SubjectTokenRefused, `jwks_uri ${jwksUri}: refused`)
    t.match(String((err as Error).message), /public address|private, loopback or link-local/, `jwks_uri ${jwksUri}: as an address we never call`)
  }
  t.equal(svc.seen.connections, 0, 'the loopback service was never connected to')
})

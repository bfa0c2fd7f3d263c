import { createServer, type Server } from 'node:http'
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK, type JWTPayload } from 'jose'

export interface OidcIssuerKey {
  readonly kid: string
  readonly alg: 'RS256' | 'ES256'
  readonly privateKey: CryptoKey
  readonly publicJwk: JWK
}

export interface TestOidcIssuer {
  /** `http://127.0.0.1:<port>` (no trailing slash): the `iss` of its tokens */
  readonly issuer: string
  /** keys published in the JWKS, newest last */
  readonly keys: OidcIssuerKey[]
  /** how many times the JWKS and the discovery document were fetched */
  readonly fetches: { jwks: number; discovery: number }
  /** A key of the given algorithm; `publish: false` keeps it out of the JWKS (an unknown kid). */
  addKey(alg: 'RS256' | 'ES256', options?: { publish?: boolean }): Promise<OidcIssuerKey>
  /**
   * A signed JWT: `iss` = this issuer, `iat` = now, `exp` = now + 5 minutes,
   * `jti` random, unless `claims` says otherwise. Signs with `key` (default:
   * the first key).
   */
  sign(claims: JWTPayload, key?: OidcIssuerKey): Promise<string>
  close(): Promise<void>
}

/**
 * A real OIDC issuer on 127.0.0.1 for workload-identity tests: discovery at
 * `/.well-known/openid-configuration` and a JWKS at `/jwks`, with keys made
 * by the test (RS256 and ES256). Like GitHub Actions' or GitLab's issuer, minus the CI.
 */
export async function startOidcIssuer(): Promise<TestOidcIssuer> {
  const keys: OidcIssuerKey[] = []
  const hidden: OidcIssuerKey[] = []
  const fetches = { jwks: 0, discovery: 0 }
  let issuer = ''
  const server: Server = createServer((req, res) => {
    const json = (body: unknown) => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify(body))
    }
    if (req.url === '/.well-known/openid-configuration') {
      fetches.discovery++
      return json({ issuer, jwks_uri: `${issuer}/jwks`, id_token_signing_alg_values_supported: ['RS256', 'ES256'] })
    }
    if (req.url === '/jwks') {
      fetches.jwks++
      return json({ keys: keys.map((k) => ({ ...k.publicJwk, kid: k.kid, alg: k.alg, use: 'sig' })) })
    }
    res.writeHead(404).end()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  issuer = `http://127.0.0.1:${(server.address() as { port: number }).port}`

  async function addKey(alg: 'RS256' | 'ES256', options: { publish?: boolean } = {}): Promise<OidcIssuerKey> {
    const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true })
    const key: OidcIssuerKey = { kid: `k${keys.length + hidden.length + 1}-${alg}`, alg, privateKey, publicJwk: await exportJWK(publicKey) }
    ;(options.publish === false ? hidden : keys).push(key)
    return key
  }
  await addKey('RS256')

  return {
    issuer,
    keys,
    fetches,
    addKey,
    async sign(claims, key = keys[0] as OidcIssuerKey) {
      const now = Math.floor(Date.now() / 1000)
      const body: JWTPayload = { iss: issuer, iat: now, exp: now + 300, jti: crypto.randomUUID(), ...claims }
      return new SignJWT(body).setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'JWT' }).sign(key.privateKey)
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

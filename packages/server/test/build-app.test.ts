import t from 'tap'
import { randomBytes, randomUUID } from 'node:crypto'
import { createLocalKeyring } from '@envkeep/env-api-plugin'
import { mintSignIn } from '@envkeep/env-api-plugin/testing'
import type { Storage } from '@envkeep/env-api-plugin'
import type { ServerConfig } from '../src/config.js'
import { addAccount, buildTestApp } from './helpers.js'
import { testLogEntry } from '@envkeep/env-api-plugin/testing'

/** A live CLI sign-in made straight in storage, and its access token. */
async function signIn(storage: Storage, config: ServerConfig, personId: string, now: Date): Promise<string> {
  return (await mintSignIn(storage, { baseUrl: config.baseUrl, personId, now, signInTtlMs: 86_400_000 })).accessToken
}

async function vaultWithOwner(storage: Storage, ownerId: string, now: Date): Promise<string> {
  const id = randomUUID()
  await storage.createVault(
    {
      id,
      name: 'shop',
      ownerId,
      plan: 'self-hosted',
      environments: [
        { name: 'development', ownersOnly: false },
        { name: 'production', ownersOnly: true },
      ],
      now,
    },
    testLogEntry({ vaultId: id, action: 'vault_created' }),
  )
  return id
}

t.test('with no master key, value routes answer 503 not_configured and the rest works', async (t) => {
  const { app, storage, accounts, config, clock } = await buildTestApp(t, { keyring: null })
  const ana = await addAccount(accounts, 'ana@example.com', 'password-ana-1')
  const now = new Date(clock.ms)
  const vaultId = await vaultWithOwner(storage, ana.id, now)
  const token = await signIn(storage, config, ana.id, now)
  const auth = { authorization: `Bearer ${token}` }

  const read = await app.inject({ method: 'GET', url: `/api/env/${vaultId}/development`, headers: auth })
  t.equal(read.statusCode, 503)
  t.equal(read.json().error, 'not_configured')
  t.equal(read.json().where, 'encryption')
  const push = await app.inject({
    method: 'POST',
    url: `/api/env/${vaultId}/development/imports`,
    headers: { ...auth, 'content-type': 'application/json' },
    payload: { variables: { A: 'b' } },
  })
  t.equal(push.statusCode, 503)
  t.equal(push.json().error, 'not_configured')

  const list = await app.inject({ method: 'GET', url: '/api/env/vaults', headers: auth })
  t.equal(list.statusCode, 200, 'the vault list needs no key')
  t.equal(list.json().vaults[0].id, vaultId)
  t.equal((await app.inject({ method: 'GET', url: '/login' })).statusCode, 200)
  t.equal((await app.inject({ method: 'GET', url: '/.well-known/oauth-authorization-server' })).statusCode, 200)
})

t.test('with a key, a value written through the API reads back; the log never holds it', async (t) => {
  const VALUE = `canary-value-${randomUUID()}`
  const { app, storage, accounts, config, clock, log } = await buildTestApp(t, { keyring: createLocalKeyring(randomBytes(32)) })
  const ana = await addAccount(accounts, 'ana@example.com', 'password-ana-1')
  const now = new Date(clock.ms)
  const vaultId = await vaultWithOwner(storage, ana.id, now)
  const token = await signIn(storage, config, ana.id, now)
  const auth = { authorization: `Bearer ${token}`, cookie: 'envkeep_session=canary-cookie-value' }
  const push = await app.inject({
    method: 'POST',
    url: `/api/env/${vaultId}/development/imports?canary=query-canary`,
    headers: { ...auth, 'content-type': 'application/json' },
    payload: { variables: { DATABASE_URL: VALUE } },
  })
  t.equal(push.statusCode, 201, push.body)
  t.match(push.json().url, new RegExp(`^${config.baseUrl}/v/${vaultId}/variables/imports/`))
  const bad = await app.inject({ method: 'GET', url: '/api/env/vaults', headers: { authorization: 'Bearer ekat_canary-bearer-wrong' } })
  t.equal(bad.statusCode, 401)
  for (const canary of [VALUE, token, 'canary-cookie-value', 'query-canary', 'canary-bearer-wrong'])
    t.notOk(log.text.includes(canary), `log free of ${canary.slice(0, 14)}…`)
  t.match(log.text, /"path":"\/api\/env\//, 'requests are logged by path')
})

t.test('a URL Fastify cannot decode gets the error record, quoting nothing', async (t) => {
  const { app } = await buildTestApp(t)
  for (const url of ['/api/env/%zzSECRETPATH/development', '/v/%E0%A4%A/SECRETPATH']) {
    const res = await app.inject({ method: 'GET', url })
    t.equal(res.statusCode, 400, url)
    t.equal(res.headers['cache-control'], 'no-store, private')
    t.match(res.headers['content-type'], /^application\/json/)
    const body = res.json() as Record<string, unknown>
    t.equal(body.error, 'invalid_request')
    t.match(body.message, /URL is not valid/)
    t.match(body.ref, /^[0-9A-HJKMNP-TV-Z]{10}$/)
    t.notMatch(res.body, 'SECRETPATH', 'the URL is not echoed')
  }
})

import { randomBytes, randomUUID } from 'node:crypto'
import t from 'tap'
import { mintSignIn } from '../../src/testing/sign-in.js'
import { buildAcmeApp } from '../../../../examples/embed.js'
import { testLogEntry } from '../../src/testing/index.js'

const BASE = 'http://127.0.0.1:3000/envkeep'

t.test('the Acme example boots with envkeep embedded under /envkeep', async (t) => {
  const { app, storage, users } = await buildAcmeApp({ baseUrl: BASE, databaseFile: ':memory:', masterKey: randomBytes(32) })
  t.teardown(() => app.close())
  await app.ready()
  const ada = users.add('ada@acme.example', 'Ada', 'correct horse')

  t.same((await app.inject({ url: '/health' })).json(), { ok: true }, "Acme's own route is untouched")
  t.not((await app.inject({ url: '/health' })).headers['cache-control'], 'no-store, private')

  // Ada signs in with Acme's login; envkeep's pages see her through the people adapter.
  const login = await app.inject({ method: 'POST', url: '/login', payload: { email: 'ada@acme.example', password: 'correct horse' } })
  t.equal(login.statusCode, 200)
  const cookie = String(login.headers['set-cookie']).split(';')[0] as string
  const page = await app.inject({ url: '/envkeep/', headers: { cookie } })
  t.equal(page.statusCode, 200, 'the vault list page answers a signed-in Acme user')
  t.match(page.body, /Ada/)

  // A vault of Ada's, and a CLI sign-in for her (as the token endpoint would make it).
  const vault = randomUUID()
  await storage.createVault(
    {
      id: vault,
      name: 'acme-web',
      ownerId: ada.id,
      plan: 'self-hosted',
      environments: [
        { name: 'development', ownersOnly: false },
        { name: 'production', ownersOnly: true },
      ],
      now: new Date(),
    },
    testLogEntry({ vaultId: vault, action: 'vault_created' }),
  )
  const { accessToken: token } = await mintSignIn(storage, { baseUrl: BASE, personId: ada.id })
  const auth = { authorization: `Bearer ${token}` }

  const list = await app.inject({ url: '/envkeep/api/env/vaults', headers: auth })
  t.equal(list.statusCode, 200)
  t.same(list.json(), { vaults: [{ id: vault, name: 'acme-web', role: 'owner', environments: ['development', 'production'] }] })

  const push = await app.inject({
    method: 'POST',
    url: `/envkeep/api/env/${vault}/development/imports`,
    headers: auth,
    payload: { variables: { DATABASE_URL: 'postgres://acme' } },
  })
  t.equal(push.statusCode, 201)
  t.equal(push.json().url, `${BASE}/v/${vault}/variables/imports/${push.json().import}`)

  const unauth = await app.inject({ url: '/envkeep/api/env/vaults' })
  t.equal(unauth.statusCode, 401)
  t.equal(
    unauth.headers['www-authenticate'],
    'Bearer realm="envkeep", resource_metadata="http://127.0.0.1:3000/.well-known/oauth-protected-resource/envkeep/api/env"',
  )

  const prm = await app.inject({ url: '/.well-known/oauth-protected-resource/envkeep/api/env' })
  t.equal(prm.statusCode, 200, 'discovery is served at the path-inserted address')
  t.equal((await app.inject({ url: '/api/env/vaults', headers: auth })).statusCode, 404, 'nothing at the root /api/env')
})

t.test('without a key the value routes answer 503 and the rest works', async (t) => {
  const { app } = await buildAcmeApp({ baseUrl: BASE, databaseFile: ':memory:', masterKey: null })
  t.teardown(() => app.close())
  await app.ready()
  t.equal((await app.inject({ url: '/health' })).statusCode, 200)
})

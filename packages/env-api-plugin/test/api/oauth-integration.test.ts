import { randomUUID } from 'node:crypto'
import t from 'tap'
import { createTestKeyring } from '../../src/testing/keyring.js'
import { build, PEOPLE, signIn } from '../oauth/helpers.js'
import { testLogEntry } from '../../src/testing/index.js'

t.test('tokens from the real OAuth flow: env:push only when the consent box was ticked', async (t) => {
  const b = await build(t, { extra: { keyring: createTestKeyring() } })
  const ada = PEOPLE.ada as { id: string }
  const vault = randomUUID()
  await b.storage.createVault(
    {
      id: vault,
      name: 'flow',
      ownerId: ada.id,
      plan: 'self-hosted',
      environments: [{ name: 'development', ownersOnly: false }],
      now: b.clock.now,
    },
    testLogEntry({ vaultId: vault, action: 'vault_created' }),
  )
  const push = (token: string) =>
    b.app.inject({
      method: 'POST',
      url: `/api/env/${vault}/development/imports`,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      payload: { variables: { A: 'flow-value' } },
    })

  const readOnly = (await signIn(b)).tokens
  t.equal(readOnly.scope.split(' ').includes('env:push'), false)
  t.equal((await b.app.inject({ url: '/api/env/vaults', headers: { authorization: `Bearer ${readOnly.access_token}` } })).statusCode, 200)
  const refused = await push(readOnly.access_token)
  t.equal(refused.statusCode, 403)
  t.equal(refused.json().error, 'push_not_allowed')

  const pusher = (await signIn(b, { scope: 'env:read env:push', allowPush: true })).tokens
  t.ok(pusher.scope.split(' ').includes('env:push'))
  const ok = await push(pusher.access_token)
  t.equal(ok.statusCode, 201)
  const status = await b.app.inject({ url: `/api/env/imports/${ok.json().import}`, headers: { authorization: `Bearer ${pusher.access_token}` } })
  t.equal(status.json().status, 'pending')

  t.equal(
    (await b.app.inject({ url: '/api/env/vaults', headers: { authorization: `Bearer ${pusher.refresh_token}` } })).statusCode,
    401,
    'a refresh token is not an access token',
  )
})

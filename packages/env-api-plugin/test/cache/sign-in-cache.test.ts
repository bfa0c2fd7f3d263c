import t from 'tap'
import { build } from '../api/helpers.js'

// A cached sign-in (issue 20) is still checked at each use: what ends by time ends on time,
// whatever the cache holds; on the memory store, or PostgreSQL with ENVKEEP_TEST_STORAGE=postgres.

const MINUTE = 60_000
const DAY = 24 * 60 * MINUTE

t.test('an access token past its expiry is refused though its sign-in is cached', async (t) => {
  const b = await build(t)
  const vault = await b.createVault('p-ana')
  await b.setValues(vault, 'development', { A: 'canary-sign-in-cache' })
  const token = await b.signIn('p-ana', { tokenTtlMs: 10 * MINUTE })
  t.equal((await b.get(`/api/env/${vault}/development`, token)).statusCode, 200)
  b.clock.now = new Date(b.clock.now.getTime() + 10 * MINUTE - 1)
  t.equal((await b.get(`/api/env/${vault}/development`, token)).statusCode, 200, 'the last millisecond of its life')
  b.clock.now = new Date(b.clock.now.getTime() + 1)
  t.equal((await b.get(`/api/env/${vault}/development`, token)).statusCode, 401, 'expired on time')
})

t.test('a sign-in idle past the limit is refused though it was cached', async (t) => {
  const b = await build(t, { extra: { signInIdleMs: 2 * DAY, accessTokenTtlMs: 30 * DAY } })
  const vault = await b.createVault('p-ana')
  const token = await b.signIn('p-ana', { tokenTtlMs: 30 * DAY })
  t.equal((await b.get(`/api/env/${vault}/development`, token)).statusCode, 200)
  b.clock.now = new Date(b.clock.now.getTime() + 3 * DAY)
  t.equal((await b.get(`/api/env/${vault}/development`, token)).statusCode, 401)
})

t.test('a revocation behind the core (straight in storage) is seen by the next request', async (t) => {
  const b = await build(t)
  const vault = await b.createVault('p-ana')
  const token = await b.signIn('p-ana')
  t.equal((await b.get(`/api/env/${vault}/development`, token)).statusCode, 200)
  t.same(await b.storage.revokeSignIns({ personId: 'p-ana' }, b.clock.now), { ok: true, value: 1 })
  t.equal((await b.get(`/api/env/${vault}/development`, token)).statusCode, 401)
})

import t from 'tap'
import { build, expectError } from './helpers.js'

t.test('per sign-in: beyond the minute limit 429 rate_limited with Retry-After, across every route', async (t) => {
  const b = await build(t, { extra: { rateLimit: { perMinute: 4, perDay: 100 } } })
  const v = await b.createVault('alice')
  const token = await b.signIn('alice')
  const other = await b.signIn('alice')
  const urls = ['/api/env/vaults', `/api/env/${v}/development`, `/api/env/imports/${v}`, '/api/env/vaults']
  const statuses = []
  for (const url of urls) statuses.push((await b.get(url, token)).statusCode)
  t.same(statuses, [200, 200, 404, 200], 'four requests on three routes are within the limit')
  for (const res of [await b.get('/api/env/vaults', token), await b.push(v, 'development', token, { variables: { A: 'canary-429' } })]) {
    expectError(t, res, 429, 'rate_limited', 'rate limit', { secrets: ['canary-429', token] })
    t.match(res.headers['retry-after'], /^[1-9]\d*$/, 'Retry-After in seconds')
    t.ok(Number(res.headers['retry-after']) <= 60)
  }
  t.equal((await b.get('/api/env/vaults', other)).statusCode, 200, 'another sign-in has its own count')
})

t.test('per sign-in: the day limit', async (t) => {
  const b = await build(t, { extra: { rateLimit: { perMinute: 100, perDay: 3 } } })
  const token = await b.signIn('alice')
  for (let i = 0; i < 3; i++) t.equal((await b.get('/api/env/vaults', token)).statusCode, 200)
  const res = await b.get('/api/env/vaults', token)
  expectError(t, res, 429, 'rate_limited', 'rate limit', { message: /more than 3 requests in a day/ })
  t.ok(Number(res.headers['retry-after']) > 60, 'Retry-After counts to the end of the day window')
})

t.test('requests without a valid token are limited per client address', async (t) => {
  const b = await build(t, { extra: { rateLimit: { perMinute: 3, perDay: 100 } } })
  const statuses = []
  for (let i = 0; i < 5; i++) {
    const res = await b.app.inject({ method: 'GET', url: '/api/env/vaults', headers: { authorization: 'Bearer nope' }, remoteAddress: '10.0.0.1' })
    statuses.push(res.statusCode)
  }
  t.same(statuses, [401, 401, 401, 429, 429])
  const elsewhere = await b.app.inject({ method: 'GET', url: '/api/env/vaults', remoteAddress: '10.0.0.2' })
  t.equal(elsewhere.statusCode, 401, 'another address has its own count')
  const token = await b.signIn('alice')
  const signedIn = await b.app.inject({ method: 'GET', url: '/api/env/vaults', headers: { authorization: `Bearer ${token}` }, remoteAddress: '10.0.0.1' })
  t.equal(signedIn.statusCode, 200, 'a valid sign-in from that address is counted on its own')
})

t.test('the defaults are 60 a minute and 5000 a day', async (t) => {
  const b = await build(t)
  const token = await b.signIn('alice')
  let first429 = 0
  for (let i = 1; i <= 61; i++) {
    const res = await b.get('/api/env/vaults', token)
    if (res.statusCode === 429) {
      first429 = i
      break
    }
  }
  t.equal(first429, 61)
})

import t from 'tap'
import { authorizeQuery, build } from './helpers.js'

t.test('the OAuth endpoints are limited per client address, with answers in their own shape', async (t) => {
  const b = await build(t, { extra: { rateLimit: { perMinute: 3, perDay: 100 } } })
  const { query } = await authorizeQuery(b)
  const requests = [
    () => b.app.inject({ method: 'GET', url: '/.well-known/oauth-authorization-server' }),
    () =>
      b.app.inject({
        method: 'POST',
        url: '/oauth/token',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: 'grant_type=refresh_token',
      }),
    () => b.app.inject({ method: 'GET', url: `/oauth/authorize?${query}` }),
  ]
  for (const r of requests) t.not((await r()).statusCode, 429, 'within the limit')

  const token = await requests[1]!()
  t.equal(token.statusCode, 429)
  t.match(token.headers['retry-after'], /^\d+$/)
  t.match(token.headers['content-type'], /^application\/json/)
  t.equal(token.headers['cache-control'], 'no-store')
  t.match(token.json(), { error: 'rate_limited', where: 'rate limit', ref: /^[0-9A-Z]{10}$/ })
  t.match(token.json().error_description, /more than 3 requests in a minute/)

  const page = await requests[2]!()
  t.equal(page.statusCode, 429)
  t.match(page.headers['content-type'], /^text\/html/)
  t.match(page.headers['retry-after'], /^\d+$/)
  t.notOk(page.headers.location, 'no redirect to the client')

  const other = await b.app.inject({ method: 'GET', url: '/.well-known/oauth-authorization-server', remoteAddress: '10.0.0.9' })
  t.equal(other.statusCode, 200, 'another address has its own count')
})

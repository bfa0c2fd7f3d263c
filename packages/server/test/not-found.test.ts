import t from 'tap'
import { buildTestApp } from './helpers.js'

// Hardening 4: unknown URLs outside /api/env were answered by the framework, quoting the
// whole URL (query included) in the body and in the log, with none of the security headers.

const SECRET = 'canary-query-secret-404'
const UNKNOWN = [
  `/setup/?token=${SECRET}`,
  `/nowhere?access_token=${SECRET}`,
  `/oauth/nowhere?code=${SECRET}`,
  `/v/some-vault/no/such/page?q=${SECRET}`,
  `/assets/missing.css?v=${SECRET}`,
]

t.test('a browser gets a 404 page with the page headers; the query is in neither body nor log', async (t) => {
  const { app, log } = await buildTestApp(t)
  for (const url of UNKNOWN) {
    const res = await app.inject({ method: 'GET', url, headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' } })
    t.equal(res.statusCode, 404, url)
    t.match(res.headers['content-type'], /^text\/html/, url)
    t.match(res.headers['content-security-policy'], /default-src 'none'/, `${url}: strict CSP`)
    t.equal(res.headers['cache-control'], 'no-store, private', url)
    t.match(res.body, /<h1>/, `${url}: a page, not framework JSON`)
    const ref = /Reference[^A-Z0-9]*([A-Z0-9]{10})/.exec(res.body)?.[1]
    t.ok(ref && log.text.includes(ref), `${url}: the page's ref finds its record in the log`)
    t.notOk(res.body.includes(SECRET), `${url}: the query is not quoted`)
  }
  t.notOk(log.text.includes(SECRET), 'no query in the log')
})

t.test('a program gets the error record with the API headers; the query is in neither body nor log', async (t) => {
  const { app, log } = await buildTestApp(t)
  for (const url of UNKNOWN) {
    for (const method of ['GET', 'POST', 'DELETE'] as const) {
      const res = await app.inject({ method, url, headers: { accept: 'application/json' } })
      t.equal(res.statusCode, 404, `${method} ${url}`)
      t.equal(res.headers['cache-control'], 'no-store, private')
      t.notOk(res.headers['access-control-allow-origin'])
      const body = res.json() as Record<string, unknown>
      t.same(Object.keys(body).sort(), ['error', 'message', 'ref', 'where'])
      t.equal(body.error, 'not_found')
      t.equal(body.where, 'web app')
      t.ok(log.text.includes(String(body.ref)), 'the ref finds its record')
      t.notOk(res.body.includes(SECRET), `${method} ${url}: the query is not quoted`)
    }
  }
  t.notOk(log.text.includes(SECRET), 'no query in the log')
})

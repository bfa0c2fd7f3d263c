import type { RouteOptions } from 'fastify'
import t from 'tap'
import { build } from './helpers.js'

// Issue 20, item 3: every answer of the env API is written by a serializer fastify compiles from
// the route's response schema (fast-json-stringify), never by JSON.stringify of whatever the
// handler returned. A route without a schema for its success or for its errors would fall back.

t.test('every route under /api/env declares its success and error response schemas', async (t) => {
  const routes: RouteOptions[] = []
  await build(t, {
    host: (app) => {
      app.addHook('onRoute', (r) => {
        if (typeof r.url === 'string' && r.url.startsWith('/api/env')) routes.push(r)
      })
    },
  })
  t.ok(routes.length >= 6, `the API's routes were seen (${routes.length})`)
  for (const r of routes) {
    const methods = (Array.isArray(r.method) ? r.method : [r.method]).join(',')
    if (methods === 'HEAD') continue // fastify's HEAD twin of a GET shares its schema
    const response = (r.schema?.response ?? {}) as Record<string, unknown>
    const codes = Object.keys(response)
    t.ok(codes.includes('4xx') && codes.includes('5xx'), `${methods} ${r.url}: 4xx and 5xx schemas`)
    // the 405 routes (methods a path does not take, not-allowed.ts) only refuse: no success to describe
    const refusesOnly = typeof r.handler === 'function' && r.handler.name === 'methodNotAllowed'
    if (!refusesOnly)
      t.ok(
        codes.some((c) => /^2\d\d$/.test(c)),
        `${methods} ${r.url}: a 2xx schema (${codes.join(', ')})`,
      )
  }
})

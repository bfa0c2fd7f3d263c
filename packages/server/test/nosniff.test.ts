import t from 'tap'
import type { InjectOptions } from 'fastify'
import { buildTestApp } from './helpers.js'

// Issue 25 (outside tests 4): JSON answers outside /api/env (the not-found record for JSON
// clients) lacked `X-Content-Type-Options: nosniff`. Every answer of the service carries it.

t.test('every kind of answer carries X-Content-Type-Options: nosniff', async (t) => {
  const { app } = await buildTestApp(t)
  const json = { accept: 'application/json' }
  const html = { accept: 'text/html' }
  const form = { 'content-type': 'application/x-www-form-urlencoded' }
  const cases: [string, InjectOptions][] = [
    ['JSON not-found record', { method: 'GET', url: '/nowhere', headers: json }],
    ['JSON not-found record (POST)', { method: 'POST', url: '/oauth/nowhere', headers: json }],
    ['HTML not-found page', { method: 'GET', url: '/nowhere', headers: html }],
    ['sign-in page', { method: 'GET', url: '/login', headers: html }],
    ['redirect to sign-in', { method: 'GET', url: '/', headers: html }],
    ['page asset', { method: 'GET', url: '/assets/envkeep.css' }],
    ['OAuth metadata', { method: 'GET', url: '/.well-known/oauth-authorization-server' }],
    ['protected-resource metadata', { method: 'GET', url: '/.well-known/oauth-protected-resource/api/env' }],
    ['OAuth token error', { method: 'POST', url: '/oauth/token', headers: form, payload: 'grant_type=nope' }],
    ['CLI client metadata', { method: 'GET', url: '/cli/oauth-client.json' }],
    ['env API without sign-in', { method: 'GET', url: '/api/env/vaults' }],
    ['a URL Fastify cannot decode', { method: 'GET', url: '/%E0%A4%A', headers: json }],
    ['a page URL Fastify cannot decode', { method: 'GET', url: '/v/%E0%A4%A', headers: html }],
    ['a form post without CSRF', { method: 'POST', url: '/login', headers: form, payload: 'email=a' }],
    ['a malformed JSON body', { method: 'POST', url: '/api/env/vaults', headers: { 'content-type': 'application/json' }, payload: '{' }],
  ]
  for (const [name, request] of cases) {
    const res = await app.inject(request)
    t.equal(res.headers['x-content-type-options'], 'nosniff', `${name} (HTTP ${res.statusCode})`)
  }
})

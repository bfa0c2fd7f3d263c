import t from 'tap'
import { resolveOptions } from '../src/options.js'

const base = { storage: {} as never, people: {} as never, keyring: null }

t.test('a bad baseUrl never boots', async (t) => {
  for (const baseUrl of ['not a url', 'https://x.example/', 'https://x.example?q=1', 'ftp://x.example', 'https://u:p@x.example']) {
    t.throws(() => resolveOptions({ ...base, baseUrl }), TypeError, baseUrl)
  }
})

t.test('derived URLs follow baseUrl, path included', async (t) => {
  const o = resolveOptions({ ...base, baseUrl: 'https://x.example/envkeep' })
  t.equal(o.resource, 'https://x.example/envkeep/api/env')
  t.equal(o.resourceMetadataUrl, 'https://x.example/.well-known/oauth-protected-resource/envkeep/api/env')
  t.equal(o.cliClientId, 'https://x.example/envkeep/cli/oauth-client.json')
  t.equal(o.secureCookies, true)
  t.equal(o.rateLimit.perMinute, 60)
  t.equal(o.rateLimit.perDay, 5000)
  t.ok(Object.isFrozen(o))
})

t.test('non-positive numbers are refused', async (t) => {
  t.throws(() => resolveOptions({ ...base, baseUrl: 'http://127.0.0.1:8080', importTtlMs: 0 }))
  t.throws(() => resolveOptions({ ...base, baseUrl: 'http://127.0.0.1:8080', rateLimit: { perMinute: -1 } }))
})

t.test('a prefix at registration is refused with a clear error (it silently doubled the paths)', async (t) => {
  const { default: Fastify } = await import('fastify')
  const { default: envApi } = await import('../src/index.js')
  const { createMemoryStorage } = await import('../src/testing/index.js')
  const app = Fastify()
  t.teardown(() => app.close())
  await t.rejects(async () => {
    await app.register(envApi, { prefix: '/team', baseUrl: 'https://x.example', storage: createMemoryStorage(), keyring: null, people: {} as never } as never)
    await app.ready()
  }, /register the plugin without a prefix \(got "\/team"\); its paths follow the path of baseUrl, e\.g\. baseUrl: 'https:\/\/example\.com\/team'/)
})

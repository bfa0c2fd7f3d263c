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

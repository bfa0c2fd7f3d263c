import t from 'tap'
import type { Storage } from '../../src/index.js'
import { build } from './helpers.js'

// The bearer check runs on every request: one storage read of the token (findToken, kind
// 'access') and nothing else of the OAuth half, whether the token is live or unknown.

const OAUTH_READS = new Set(['findToken', 'findAuthorizationCode', 'listSignIns', 'findCiIdentities'])

function counting(calls: string[]): (s: Storage) => Storage {
  return (s) =>
    new Proxy(s, {
      get(target, p, r) {
        const v = Reflect.get(target, p, r)
        if (typeof p !== 'string' || !OAUTH_READS.has(p) || typeof v !== 'function') return v
        return (...a: unknown[]) => {
          calls.push(p === 'findToken' ? `findToken:${String(a[1])}` : p)
          return (v as (...a: unknown[]) => unknown).apply(target, a)
        }
      },
    })
}

t.test('a request with a live token reads its sign-in once: one findToken, nothing else', async (t) => {
  const calls: string[] = []
  const b = await build(t, { wrapStorage: counting(calls) })
  const token = await b.signIn('alice')
  calls.length = 0
  t.equal((await b.get('/api/env/vaults', token)).statusCode, 200)
  t.same(calls, ['findToken:access'])
})

t.test('an unknown token costs the same one read, then 401', async (t) => {
  const calls: string[] = []
  const b = await build(t, { wrapStorage: counting(calls) })
  t.equal((await b.get('/api/env/vaults', 'ekat_unknownunknownunknownunknown')).statusCode, 401)
  t.same(calls, ['findToken:access'])
})

import t from 'tap'
import { addAccount, buildTestApp, csrfOf, setCookies } from './helpers.js'

// Hardening 3: with ENVKEEP_TRUST_PROXY=true, behind a proxy that appends to
// X-Forwarded-For, a client picked its own address: login throttling (per address) was
// bypassed by sending a new made-up address each time. With hops or the proxy's address,
// the address is the one the proxy saw.

async function wrongLogins(env: Record<string, string>, forwardedFor: (i: number) => string, email: (i: number) => string = () => 'ana@example.com') {
  const t0 = { teardown: (fn: () => unknown) => void cleanups.push(fn) }
  const cleanups: (() => unknown)[] = []
  const b = await buildTestApp(t0 as never, { env, loginAttemptsPerMinute: 3 })
  await addAccount(b.accounts, 'ana@example.com', 'right-password-canary')
  const statuses: number[] = []
  for (let i = 0; i < 6; i++) {
    const page = await b.app.inject({ method: 'GET', url: '/login', remoteAddress: '127.0.0.1' })
    const cookie = Object.entries(setCookies(page))
      .map(([k, v]) => `${k}=${v}`)
      .join('; ')
    const res = await b.app.inject({
      method: 'POST',
      url: '/login',
      remoteAddress: '127.0.0.1', // the proxy
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': forwardedFor(i) },
      payload: new URLSearchParams({ _csrf: csrfOf(page.body), email: email(i), password: `wrong-${i}` }).toString(),
    })
    statuses.push(res.statusCode)
  }
  for (const fn of cleanups.reverse()) await fn()
  return statuses
}

for (const setting of ['1', '127.0.0.1', '127.0.0.0/8', 'loopback']) {
  t.test(`ENVKEEP_TRUST_PROXY=${setting}: a client cannot choose its address by prepending to X-Forwarded-For`, async (t) => {
    // the client sends "X-Forwarded-For: <made up>"; the proxy appends the address it saw
    const statuses = await wrongLogins({ ENVKEEP_TRUST_PROXY: setting }, (i) => `198.51.100.${i}, 203.0.113.7`)
    t.same(statuses, [401, 401, 401, 429, 429, 429], 'the fourth attempt from 203.0.113.7 is throttled')
  })
}

t.test('two clients behind the proxy are throttled separately', async (t) => {
  // (each tries other emails: the per-account back-off is not what is tested here)
  const statuses = await wrongLogins(
    { ENVKEEP_TRUST_PROXY: '1' },
    (i) => (i % 2 === 0 ? '203.0.113.7' : '203.0.113.8'),
    (i) => `person-${i}@example.com`,
  )
  t.same(statuses, [401, 401, 401, 401, 401, 401], 'three each')
})

t.test('no proxy trusted: X-Forwarded-For is ignored, the peer is the client', async (t) => {
  const statuses = await wrongLogins({}, (i) => `198.51.100.${i}`)
  t.same(statuses, [401, 401, 401, 429, 429, 429])
})

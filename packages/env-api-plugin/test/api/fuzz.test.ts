import fc from 'fast-check'
import t from 'tap'
import { build } from './helpers.js'

/** Put into everything generated that the server should never repeat. */
const MARK = 'ZqECHO'
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE', 'QUERY', 'PROPFIND', 'LOCK']
const NAMES = ['A', 'DATABASE_URL', '_x', 'API_KEY_2']

t.test('fuzz: random paths, methods, headers and bodies never give an undesigned 5xx, never echo, always carry the headers', async (t) => {
  const b = await build(t, { extra: { rateLimit: { perMinute: 1_000_000, perDay: 1_000_000 } } })
  const v = await b.createVault('alice', { members: { bob: 'viewer' } })
  await b.setValues(v, 'development', { EXISTING: 'fuzz-existing-value' })
  const alice = await b.signIn('alice')
  const bob = await b.signIn('bob')
  const readOnly = await b.signIn('alice', { scopes: ['env:read'] })

  const marked = fc.string({ unit: fc.constantFrom(...'abcXYZ019_-.~'), maxLength: 12 }).map((s) => `${MARK}${s}`)
  const segment = fc.oneof(
    fc.constantFrom(v, 'vaults', 'imports', 'development', 'production', 'preview', 'staging', '3f2a9c1e-0000-4000-8000-00000000dead'),
    marked,
    fc.constantFrom('', '%41', '%20', '%2F', v.toUpperCase()), // '.' and '..' leave /api/env once normalised
  )
  const path = fc.oneof(
    fc.array(segment, { maxLength: 5 }).map((segs) => `/api/env/${segs.join('/')}`),
    fc.constantFrom(`/api/env/${v}/development`, `/api/env/${v}/development/imports`, '/api/env/vaults', `/api/env/imports/${v}`),
  )
  const query = fc.option(
    marked.map((m) => `?q=${m}&access_token=${m}`),
    { nil: '' },
  )
  const authorization = fc.option(
    fc.oneof(
      fc.constantFrom(`Bearer ${alice}`, `bearer ${alice}`, `Bearer ${bob}`, `Bearer ${readOnly}`),
      marked.map((m) => `Bearer ${m}`),
      marked.map((m) => `Basic ${Buffer.from(`u:${m}`).toString('base64')}`),
      marked,
    ),
    { nil: undefined },
  )
  const contentType = fc.option(
    fc.oneof(
      fc.constantFrom('application/json', 'application/json; charset=utf-8', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data'),
      marked.map((m) => `application/${m}`),
    ),
    { nil: undefined },
  )
  const value = fc.oneof(
    marked,
    fc.constant(''),
    fc.integer(),
    fc.constant(null),
    marked.map((m) => m.repeat(7000)),
  )
  const body = fc.option(
    fc.oneof(
      fc
        .record({
          variables: fc.dictionary(fc.oneof(fc.constantFrom(...NAMES), marked), value, { maxKeys: 4 }),
          refused: fc.option(
            fc.array(fc.record({ line: fc.oneof(fc.integer(), fc.double()), name: marked, reason: fc.oneof(marked, fc.constant('')) }), { maxLength: 3 }),
            { nil: undefined },
          ),
        })
        .map((o) => JSON.stringify(o)),
      fc.record({ variables: fc.dictionary(fc.constantFrom(...NAMES), marked, { minKeys: 1, maxKeys: 3 }) }).map((o) => JSON.stringify(o)),
      fc.json().map((j) => j.replace(/"/, `"${MARK}`)),
      marked.map((m) => `{"variables": {"A": "${m}"`), // malformed
      marked.map((m) => `${m}=1`),
      fc.constantFrom(2_000_000, 1_048_577).map((n) => `{"variables":{"A":"${MARK}${'x'.repeat(n)}"}}`), // huge
      fc.constant(`{"__proto__":{"${MARK}":1},"variables":{"A":"${MARK}"}}`),
    ),
    { nil: undefined },
  )
  const extraHeaders = fc.dictionary(fc.constantFrom('x-forwarded-for', 'origin', 'cookie', 'x-custom', 'accept', 'access-control-request-method'), marked, {
    maxKeys: 3,
  })

  const validAuth = fc.constantFrom(`Bearer ${alice}`, `bearer ${alice}`, `Bearer ${bob}`, `Bearer ${readOnly}`)
  const pushBody = fc.oneof(
    fc.record({ variables: fc.dictionary(fc.constantFrom(...NAMES), marked, { minKeys: 1, maxKeys: 3 }) }).map((o) => JSON.stringify(o)),
    body.map((x) => x ?? ''),
  )
  /** Requests aimed at the real routes with mostly valid credentials, so the handlers are reached. */
  const targeted = fc.oneof(
    fc.tuple(
      fc.constant('POST'),
      fc.constantFrom(`/api/env/${v}/development/imports`, `/api/env/${v}/production/imports`),
      fc.constant(''),
      validAuth,
      fc.oneof(
        fc.constant('application/json'),
        contentType.map((c) => c ?? 'text/plain'),
      ),
      pushBody,
      extraHeaders,
    ),
    fc.tuple(
      fc.constantFrom('GET', 'HEAD'),
      fc.constantFrom(`/api/env/${v}/development`, `/api/env/${v}/production`, '/api/env/vaults', `/api/env/imports/${v}`),
      query,
      validAuth,
      contentType,
      fc.constant(undefined),
      extraHeaders,
    ),
  )
  const anything = fc.tuple(fc.constantFrom(...METHODS), path, query, authorization, contentType, body, extraHeaders)

  let runs = 0
  const statuses = new Map<number, number>()
  await fc.assert(
    fc.asyncProperty(fc.oneof({ arbitrary: targeted, weight: 1 }, { arbitrary: anything, weight: 1 }), async ([method, p, q, auth, type, payload, extra]) => {
      runs++
      const headers: Record<string, string> = { ...extra }
      if (auth !== undefined) headers.authorization = auth
      if (type !== undefined) headers['content-type'] = type
      const res = await b.app.inject({
        method: method as 'GET',
        url: p + q,
        headers,
        ...(payload !== undefined && method !== 'GET' && method !== 'HEAD' ? { payload } : {}),
      })
      statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1)
      const where = `${method} ${p}${q} → ${res.statusCode}`
      if (res.statusCode >= 500) throw new Error(`undesigned 5xx: ${where}: ${res.body.slice(0, 200)}`)
      if (res.headers['cache-control'] !== 'no-store, private') throw new Error(`no cache-control: ${where}`)
      if (Object.keys(res.headers).some((h) => h.startsWith('access-control-'))) throw new Error(`CORS header: ${where}`)
      if (method !== 'HEAD' && !/^application\/json/.test(String(res.headers['content-type']))) throw new Error(`not JSON: ${where}`)
      const all = JSON.stringify(res.headers) + res.body
      if (all.includes(MARK)) throw new Error(`echoed: ${where}`)
      if (res.statusCode >= 400 && method !== 'HEAD') {
        const e = res.json()
        if (Object.keys(e).sort().join() !== 'error,message,ref,where') throw new Error(`error shape: ${where}`)
      }
    }),
    { numRuns: 400, seed: Number(process.env.FUZZ_SEED ?? 20261121) },
  )
  t.equal(runs, 400)
  t.ok(statuses.get(201), 'some pushes went through')
  t.ok(
    [200, 201, 400, 401, 403, 404, 405, 415].every((c) => statuses.get(c)),
    `a spread of answers: ${JSON.stringify([...statuses])}`,
  )
  t.notOk(
    b.logs.some((l) => l.includes(MARK) && !l.includes('"url"')),
    'the log holds nothing sent except the URL in request lines',
  )
})

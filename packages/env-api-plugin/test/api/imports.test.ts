import t from 'tap'
import { stagedValues } from '@envkeep/env-api-plugin/testing'
import { BASE_URL, build, expectApi, expectError } from './helpers.js'

const CANARY = 'canary-push-5d1c7e22'
const BAD = ['invalid_request', 'env API'] as const
const NOT_FOUND = ['not_found', "database (only what's shared with you is visible)"] as const
const RFC3339_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

t.test('201: a pending push with its review url; values sealed before storage', async (t) => {
  const b = await build(t)
  const v = await b.createVault('alice', { members: { bob: 'editor' } })
  await b.setValues(v, 'development', { EXISTING: 'old' })
  const res = await b.push(v, 'development', await b.signIn('bob'), {
    variables: { NEW_ONE: `${CANARY}-1`, EXISTING: `${CANARY}-2`, A: `${CANARY}-3` },
    refused: [{ line: 7, name: 'ENVKEEP_TOKEN', reason: 'client setting' }],
  })
  t.equal(res.statusCode, 201)
  expectApi(t, res, [CANARY])
  const body = res.json()
  t.match(body.import, /^[0-9a-f-]{36}$/)
  t.same(body, {
    import: body.import,
    status: 'pending',
    vault: v,
    environment: 'development',
    names: ['A', 'EXISTING', 'NEW_ONE'],
    overwrites: ['EXISTING'],
    expires_at: new Date(b.clock.now.getTime() + 7 * 86_400_000).toISOString(),
    url: `${BASE_URL}/v/${v}/variables/imports/${body.import}`,
  })
  t.match(body.expires_at, RFC3339_MS)
  const imp = await b.storage.getImport(body.import, b.clock.now)
  t.equal(imp?.senderId, 'bob')
  t.same(imp?.refused, [{ line: 7, name: 'ENVKEEP_TOKEN', reason: 'client setting' }])
  const staged = await stagedValues(b.storage, body.import)
  t.equal(staged.length, 3)
  for (const s of staged) t.notOk(Buffer.from(s.sealed).includes(CANARY), `${s.name} is sealed`)
  const created = await b.storage.listAccessLog(v, { action: 'push_created', limit: 5 })
  t.same(
    created.map((e) => [e.personId, e.environment, e.names]),
    [['bob', 'development', ['A', 'EXISTING', 'NEW_ONE']]],
  )
  t.notOk(
    b.logs.some((l) => l.includes(CANARY)),
    'no value in the server log',
  )
  // the variables themselves are untouched until a person applies the push
  const read = await b.get(`/api/env/${v}/development`, await b.signIn('alice'))
  t.same(read.json().variables, { EXISTING: 'old' })
})

t.test('400 invalid_request, never echoing the offending content', async (t) => {
  const b = await build(t)
  const v = await b.createVault('alice')
  const token = await b.signIn('alice')
  const big = 'é'.repeat(32_769) // 65,538 bytes in 32,769 characters
  const cases: Array<[string, unknown, RegExp?]> = [
    ['not JSON', `{"variables": {"A": "${CANARY}"`, /not valid JSON/],
    ['plain text in a JSON content type', `${CANARY}=1`, /not valid JSON/],
    ['empty body', '', /empty/],
    ['JSON null', 'null'],
    ['an array', `["${CANARY}"]`],
    ['a string', `"${CANARY}"`],
    ['variables missing', { refused: [] }],
    ['variables not an object', { variables: [CANARY] }],
    ['a number value', { variables: { A: 5 } }],
    ['a null value', { variables: { A: null } }],
    ['a nested value', { variables: { A: { v: CANARY } } }],
    ['no variables', { variables: {} }, /no variables/],
    ['a name with a dash', { variables: { [`BAD-${CANARY}`]: 'x' } }, /variable 1 of the push has a bad name/],
    ['a name with a leading digit', { variables: { OK: 'x', [`1${CANARY}`]: 'x' } }, /variable 2 of the push has a bad name/],
    ['a name with a space', { variables: { 'A B': CANARY } }, /bad name/],
    ['a unicode name', { variables: { ÉTÉ: CANARY } }, /bad name/],
    ['a name over 256 characters', { variables: { [`A${'x'.repeat(256)}`]: CANARY } }, /1 to 256 characters/],
    ['an ENVKEEP_ name', { variables: { [`ENVKEEP_${CANARY.replace(/-/g, '_')}`]: CANARY } }, /ENVKEEP_ are the client's own settings/],
    ['an empty value', { variables: { A: '' } }, /must not be empty/],
    ['a value over 65,536 bytes of UTF-8', { variables: { A: big } }, /at most 65536 bytes/],
    // JSON may escape a lone UTF-16 surrogate; UTF-8 cannot hold it (it was stored as U+FFFD)
    ['a value with a lone high surrogate', `{"variables": {"A": "${CANARY}\\ud800"}}`, /variable 1 of the push has a bad value: a value must be valid Unicode/],
    [
      'a value with a lone low surrogate',
      `{"variables": {"OK": "x", "A": "\\udc00${CANARY}"}}`,
      /variable 2 of the push has a bad value: .*lone UTF-16 surrogate/,
    ],
    [
      'a refused name with a lone surrogate',
      `{"variables": {"A": "x"}, "refused": [{"line": 3, "name": "\\ud800", "reason": "r"}]}`,
      /refused entry 1: name must be valid Unicode/,
    ],
    [
      'a refused reason with a lone surrogate',
      `{"variables": {"A": "x"}, "refused": [{"line": 3, "name": "A", "reason": "\\udfff"}]}`,
      /refused entry 1: reason must be valid Unicode/,
    ],
    ['refused not an array', { variables: { A: 'x' }, refused: CANARY }],
    ['refused line 0', { variables: { A: 'x' }, refused: [{ line: 0, name: CANARY, reason: 'r' }] }, /refused entry 1: line/],
    ['refused line not an integer', { variables: { A: 'x' }, refused: [{ line: 1.5, name: 'A', reason: 'r' }] }],
    ['refused line a string', { variables: { A: 'x' }, refused: [{ line: '3', name: 'A', reason: 'r' }] }],
    ['refused name not a string', { variables: { A: 'x' }, refused: [{ line: 3, name: 7, reason: 'r' }] }],
    ['refused reason empty', { variables: { A: 'x' }, refused: [{ line: 3, name: 'A', reason: '' }] }, /reason must be 1 to 200/],
    ['refused reason over 200', { variables: { A: 'x' }, refused: [{ line: 3, name: 'A', reason: `${CANARY}${'r'.repeat(200)}` }] }, /reason/],
    ['refused reason missing', { variables: { A: 'x' }, refused: [{ line: 3, name: 'A' }] }],
    [
      'over 1000 refused entries',
      { variables: { A: 'x' }, refused: Array.from({ length: 1001 }, (_, i) => ({ line: i + 1, name: 'B', reason: 'r' })) },
      /at most 1000 refused entries/,
    ],
    ['a __proto__ key', `{"variables": {"A": "x"}, "__proto__": {"x": "${CANARY}"}}`, /__proto__/],
    ['a variable named __proto__', `{"variables": {"A": "x", "__proto__": "${CANARY}"}}`, /__proto__/],
  ]
  for (const [name, body, message] of cases) {
    const res = await b.push(v, 'development', token, body)
    t.test(name, async (t) => {
      expectError(t, res, 400, ...BAD, { vault: v, secrets: [CANARY, big.slice(0, 100)], ...(message ? { message } : {}) })
    })
  }
  t.same(await b.storage.listImports(v, { limit: 100 }), [], 'no push was created')
})

t.test('a surrogate pair (an emoji, escaped or not) is a valid value and comes back as sent', async (t) => {
  const b = await build(t)
  const v = await b.createVault('alice')
  const res = await b.push(v, 'development', await b.signIn('alice'), `{"variables": {"A": "\\ud83d\\udd11 ${CANARY} \u{1F511}"}}`)
  t.equal(res.statusCode, 201)
})

t.test('the limits are inclusive: 256-character names, 65,536-byte values, 1000 refused entries, 200-character reasons', async (t) => {
  const b = await build(t)
  const v = await b.createVault('alice')
  const res = await b.push(v, 'development', await b.signIn('alice'), {
    variables: { [`A${'x'.repeat(255)}`]: 'é'.repeat(32_768), _: 'x' },
    refused: Array.from({ length: 1000 }, (_, i) => ({ line: i + 1, name: i ? 'B' : '', reason: 'r'.repeat(200) })),
  })
  t.equal(res.statusCode, 201)
})

t.test('413 too_large over 1,048,576 bytes; a body at the limit is read', async (t) => {
  const b = await build(t)
  const v = await b.createVault('alice')
  const token = await b.signIn('alice')
  const shell = JSON.stringify({ variables: { A: '' } })
  const atLimit = shell.replace('""', `"${'x'.repeat(1_048_576 - shell.length)}"`)
  t.equal(Buffer.byteLength(atLimit), 1_048_576)
  const at = await b.push(v, 'development', token, atLimit)
  expectError(t, at, 400, ...BAD, { message: /at most 65536 bytes/ }) // read and judged, not refused for size
  const over = await b.push(v, 'development', token, atLimit.replace('"x', '"xx'))
  expectError(t, over, 413, 'too_large', 'env API', { vault: v, message: /over the limit of 1048576 bytes/ })
  const huge = await b.push(v, 'development', token, `{"variables":{"A":"${CANARY}${'y'.repeat(3_000_000)}"}}`)
  expectError(t, huge, 413, 'too_large', 'env API', { secrets: [CANARY] })
})

t.test('415 unsupported_media_type for anything but JSON', async (t) => {
  const b = await build(t)
  const v = await b.createVault('alice')
  const token = await b.signIn('alice')
  for (const type of [
    'text/plain',
    'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=x',
    'application/xml',
    'text/json',
    'application/octet-stream',
    `application/${CANARY}`,
  ]) {
    const res = await b.app.inject({
      method: 'POST',
      url: `/api/env/${v}/development/imports`,
      headers: { authorization: `Bearer ${token}`, 'content-type': type },
      payload: `variables[A]=${CANARY}`,
    })
    t.test(type, async (t) => expectError(t, res, 415, 'unsupported_media_type', 'env API', { vault: v, secrets: [CANARY] }))
  }
  const charset = await b.app.inject({
    method: 'POST',
    url: `/api/env/${v}/development/imports`,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json; charset=utf-8' },
    payload: JSON.stringify({ variables: { A: 'x' } }),
  })
  t.equal(charset.statusCode, 201, 'JSON with a charset is JSON')
})

t.test('403 forbidden for a role that may not push; 403 push_not_allowed for a sign-in without env:push', async (t) => {
  const b = await build(t)
  const v = await b.createVault('alice', { members: { bob: 'editor', carol: 'viewer' } })
  const body = { variables: { A: CANARY } }
  const cases: Array<[string, string, RegExp]> = [
    ['bob', 'production', /^sending a push to production of vault [0-9a-f]{8}: your role \(editor\) cannot push to owners-only environments$/],
    ['carol', 'development', /^sending a push to development of vault [0-9a-f]{8}: your role \(viewer\) cannot push to any environment$/],
  ]
  for (const [person, env, message] of cases) {
    const res = await b.push(v, env, await b.signIn(person), body)
    expectError(t, res, 403, 'forbidden', 'database (your role)', { vault: v, message, secrets: [CANARY] })
  }
  const readOnly = await b.signIn('alice', { scopes: ['env:read'] })
  const res = await b.push(v, 'development', readOnly, body)
  expectError(t, res, 403, 'push_not_allowed', 'env API', { vault: v, secrets: [CANARY], message: /login --push/ })
  t.equal((await b.get(`/api/env/${v}/development`, readOnly)).statusCode, 200, 'it may still read')
  t.same(await b.storage.listImports(v, { limit: 10 }), [])
})

t.test('404 not_found for an unreachable vault or a missing environment', async (t) => {
  const b = await build(t)
  const v = await b.createVault('alice')
  const theirs = await b.createVault('dave')
  const token = await b.signIn('alice')
  for (const [vault, env] of [
    [theirs, 'development'],
    ['3f2a9c1e-0000-4000-8000-00000000dead', 'development'],
    [v, 'staging'],
    ['vaults', 'development'],
  ] as const) {
    const res = await b.push(vault, env, token, { variables: { A: CANARY } })
    expectError(t, res, 404, ...NOT_FOUND, { secrets: [CANARY, 'staging'] })
  }
})

t.test('503 not_configured without a key; nothing stored', async (t) => {
  const b = await build(t, { keyring: null })
  const v = await b.createVault('alice')
  const res = await b.push(v, 'development', await b.signIn('alice'), { variables: { A: CANARY } })
  expectError(t, res, 503, 'not_configured', 'encryption', { vault: v, secrets: [CANARY] })
  t.same(await b.storage.listImports(v, { limit: 10 }), [])
})

t.test('507 storage_limit names the vault, the limit, the plan and the usage', async (t) => {
  const b = await build(t, {
    extra: { plans: { 'self-hosted': { maxVariables: 3, maxBytes: 1_000_000 }, tiny: { maxVariables: 100, maxBytes: 200 } } },
  })
  const v = await b.createVault('alice')
  const token = await b.signIn('alice')
  await b.setValues(v, 'development', { A: 'a', B: 'b' })
  const res = await b.push(v, 'development', token, { variables: { C: CANARY, D: CANARY } })
  expectError(t, res, 507, 'storage_limit', 'env API', {
    vault: v,
    secrets: [CANARY],
    message: new RegExp(`vault ${v.slice(0, 8)} is at its storage limit of 3 variables on plan self-hosted; with this push it would use \\d+`),
  })
  const ok = await b.push(v, 'development', token, { variables: { C: 'c' } })
  t.equal(ok.statusCode, 201, 'within the limit')

  const small = await b.createVault('alice', { plan: 'tiny' })
  const bytes = await b.push(small, 'development', token, { variables: { A: 'x'.repeat(500) } })
  expectError(t, bytes, 507, 'storage_limit', 'env API', {
    vault: small,
    message: /of 200 bytes of stored values on plan tiny; with this push it would use \d+/,
  })
})

t.test('GET /api/env/imports/:import answers only the sender', async (t) => {
  const b = await build(t)
  const v = await b.createVault('alice', { members: { bob: 'editor' } })
  const bob = await b.signIn('bob')
  const created = (await b.push(v, 'development', bob, { variables: { B: 'x', A: 'y' } })).json()
  const res = await b.get(`/api/env/imports/${created.import}`, bob)
  t.equal(res.statusCode, 200)
  expectApi(t, res)
  t.same(res.json(), {
    import: created.import,
    status: 'pending',
    environments: ['development'],
    names: ['A', 'B'],
    expires_at: created.expires_at,
    decided_at: null,
  })
  const alice = await b.signIn('alice')
  const bodies = new Set<string>()
  for (const [who, url] of [
    [alice, `/api/env/imports/${created.import}`], // the vault's owner, not the sender
    [bob, '/api/env/imports/3f2a9c1e-0000-4000-8000-00000000dead'],
    [bob, `/api/env/imports/not-a-uuid-${CANARY}`],
  ] as const) {
    const r = await b.get(url, who)
    expectError(t, r, 404, ...NOT_FOUND, { secrets: [CANARY] })
    bodies.add(r.json().message.replace(/^[^:]*: /, ''))
  }
  t.equal(bodies.size, 1)
})

t.test('the status route reports decisions and expiry', async (t) => {
  const { decideImport } = await import('../../src/index.js')
  const b = await build(t)
  const v = await b.createVault('alice', { members: { bob: 'editor' } })
  const bob = await b.signIn('bob')
  const first = (await b.push(v, 'development', bob, { variables: { A: CANARY } })).json()
  const second = (await b.push(v, 'development', bob, { variables: { B: 'b' } })).json()
  const third = (await b.push(v, 'development', bob, { variables: { C: 'c' } })).json()
  b.clock.now = new Date(b.clock.now.getTime() + 60_000)
  const decidedAt = b.clock.now.toISOString()
  t.match(await decideImport(b.storage, { importId: first.import, decision: 'applied', personId: 'alice', now: b.clock.now, keyring: b.keyring }), {
    outcome: 'decided',
  })
  t.match(await decideImport(b.storage, { importId: second.import, decision: 'rejected', personId: 'alice', now: b.clock.now, keyring: b.keyring }), {
    outcome: 'decided',
  })
  t.match((await b.get(`/api/env/imports/${first.import}`, bob)).json(), { status: 'applied', decided_at: decidedAt })
  t.match((await b.get(`/api/env/imports/${second.import}`, bob)).json(), { status: 'rejected', decided_at: decidedAt })
  t.same((await b.get(`/api/env/${v}/development`, bob)).json().variables, { A: CANARY }, 'applied values are readable')
  b.clock.now = new Date(new Date(third.expires_at).getTime() + 1)
  const expired = (await b.get(`/api/env/imports/${third.import}`, await b.signIn('bob'))).json()
  t.match(expired, { status: 'expired', decided_at: third.expires_at }, 'decided_at of an expired push is its expiry')
})

t.test('a database failure while storing a push: server_error with the SQLSTATE, no value anywhere', async (t) => {
  const { StorageError } = await import('../../src/index.js')
  const { failing } = await import('./helpers.js')
  for (const [code, status] of [
    ['55P03', 504],
    ['23505', 500],
    ['57P01', 503],
  ] as const) {
    const b = await build(t, { wrapStorage: failing('createImport', () => new StorageError(code, 'imports')) })
    const v = await b.createVault('alice')
    const res = await b.push(v, 'development', await b.signIn('alice'), { variables: { A: CANARY } })
    expectError(t, res, status, 'server_error', 'env API: database', {
      vault: v,
      secrets: [CANARY],
      message: new RegExp(`^sending a push to development of vault [0-9a-f]{8}: ${code} `),
    })
    t.notOk(b.logs.some((l) => l.includes(CANARY)))
  }
})

t.test('bytes that are not UTF-8 in a JSON body: 400, no push (issue 25, not stored as U+FFFD)', async (t) => {
  const b = await build(t)
  const v = await b.createVault('alice')
  const token = await b.signIn('alice')
  const bytes = (inner: number[]) => Buffer.concat([Buffer.from(`{"variables": {"A": "${CANARY}`), Buffer.from(inner), Buffer.from('"}}')])
  for (const [name, payload] of [
    ['a 0xFF byte', bytes([0xff])],
    ['a CESU-8 surrogate (ED A0 80)', bytes([0xed, 0xa0, 0x80])],
    ['a truncated sequence', bytes([0xe2, 0x82])],
    ['an overlong encoding', bytes([0xc0, 0xaf])],
  ] as const) {
    const res = await b.app.inject({
      method: 'POST',
      url: `/api/env/${v}/development/imports`,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      payload,
    })
    t.test(name, async (t) => {
      expectError(t, res, 400, ...BAD, { vault: v, secrets: [CANARY], message: /not UTF-8/ })
    })
  }
  t.same(await b.storage.listImports(v, { limit: 100 }), [], 'no push was created')
  // valid UTF-8 of the same shape goes through, byte for byte
  const ok = await b.app.inject({
    method: 'POST',
    url: `/api/env/${v}/development/imports`,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    payload: bytes([0xe2, 0x82, 0xac]),
  })
  t.equal(ok.statusCode, 201)
})

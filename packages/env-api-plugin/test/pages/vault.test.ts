import t from 'tap'
import { variableMetas } from '@envkeep/env-api-plugin/testing'
import { build, PEOPLE, session } from './helpers.js'
import { testLogEntry, TEST_NO_LIMIT, writeTestValue } from '../../src/testing/index.js'

const CANARY = 'canary-value-7f3e2d1c'

t.test('an owner adds, reveals, changes and deletes a variable; each is logged, values never', async (t) => {
  const b = await build(t)
  const s = session(b.app, 'owner')
  const url = `/v/${b.vaultId}`
  const page = await s.get(url)
  t.equal(page.statusCode, 200)
  // the vault is a set of pages behind a tab bar
  for (const label of [
    '>Variables<',
    '>Pushes<',
    '>History<',
    '>Members<',
    '>Access log<',
    '>Settings<',
    'Add variable',
    'Add an environment',
    'owners only',
    'Find a variable',
  ]) {
    t.match(page.body, label, `label ${label}`)
  }
  t.notMatch(page.body, '>Invite<', 'Members are on their own page')
  t.match((await s.get(`${url}/members`)).body, '>Invite<')
  t.match((await s.get(`${url}/pushes`)).body, 'Pending pushes')
  t.match((await s.get(`${url}/access-log`)).body, '<h2>Access log</h2>')

  const add = await s.post(`${url}/variables/add`, { environment: 'development', name: 'API_KEY', value: CANARY })
  t.equal(add.statusCode, 303)
  t.equal(add.headers.location, `${url}?env=development&done=variable_added#env-development`)
  const after = await s.get(`${url}?done=variable_added`)
  t.match(after.body, '<code class="name">API_KEY</code>')
  t.match(after.body, 'The variable was added.')
  t.notMatch(after.body, CANARY, 'the value is hidden until revealed')
  t.match(after.body, />Reveal</)

  const reveal = await s.post(`${url}/reveal`, { environment: 'development', name: 'API_KEY' })
  t.equal(reveal.statusCode, 200)
  t.match(reveal.body, `<code class="value" data-name="API_KEY">${CANARY}</code>`)
  t.equal(reveal.headers['cache-control'], 'no-store, private')

  const all = await s.post(`${url}/reveal`, { environment: 'development' })
  t.match(all.body, CANARY, 'reveal all shows it too')

  t.equal((await s.post(`${url}/variables/change`, { environment: 'development', name: 'API_KEY', value: `${CANARY}-2` })).statusCode, 303)
  const again = await s.post(`${url}/reveal`, { environment: 'development', name: 'API_KEY' })
  t.match(again.body, `${CANARY}-2`)

  t.equal((await s.post(`${url}/variables/delete`, { environment: 'development', name: 'API_KEY' })).statusCode, 303)
  t.same(await variableMetas(b.storage, b.vaultId, 'development'), [])

  // the test's own set-up (vault and members made in storage) is logged as nobody's
  const log = (await b.storage.listAccessLog(b.vaultId, { limit: 50 })).filter((l) => l.personId !== null)
  t.same(log.map((l) => [l.action, l.environment, l.names, l.personId]).reverse(), [
    ['variable_set', 'development', ['API_KEY'], PEOPLE.owner!.id],
    ['read', 'development', ['API_KEY'], PEOPLE.owner!.id],
    ['read', 'development', ['API_KEY'], PEOPLE.owner!.id],
    ['variable_set', 'development', ['API_KEY'], PEOPLE.owner!.id],
    ['read', 'development', ['API_KEY'], PEOPLE.owner!.id],
    ['variable_deleted', 'development', ['API_KEY'], PEOPLE.owner!.id],
  ])
  t.notMatch(b.logs.join('\n'), CANARY, 'no value in the server log')
})

t.test('refused variable forms show on top of the vault page, nothing changes, the value is not echoed', async (t) => {
  const b = await build(t)
  const s = session(b.app, 'owner')
  const url = `/v/${b.vaultId}`
  await s.get(url)
  await s.post(`${url}/variables/add`, { environment: 'development', name: 'TAKEN', value: 'x' })
  const cases: [string, Record<string, string>, number][] = [
    ['/variables/add', { environment: 'development', name: '1BAD', value: CANARY }, 400],
    ['/variables/add', { environment: 'development', name: 'ENVKEEP_TOKEN', value: CANARY }, 400],
    ['/variables/add', { environment: 'development', name: '__proto__', value: CANARY }, 400],
    ['/variables/add', { environment: 'development', name: 'EMPTY', value: '' }, 400],
    ['/variables/add', { environment: 'development', name: 'HUGE', value: 'x'.repeat(65_537) }, 400],
    ['/variables/add', { environment: 'development', name: 'TAKEN', value: CANARY }, 409],
    ['/variables/add', { environment: 'nope', name: 'OK', value: CANARY }, 404],
    ['/variables/change', { environment: 'development', name: 'MISSING', value: CANARY }, 404],
    ['/variables/delete', { environment: 'development', name: 'MISSING' }, 404],
  ]
  for (const [path, fields, status] of cases) {
    const res = await s.post(`${url}${path}`, fields)
    const label = `${path} ${fields.name} ${fields.environment}`
    t.equal(res.statusCode, status, label)
    t.match(res.body, /role="alert"/, label)
    t.match(res.body, /failed: [^<]+\. Reference: <code>[0-9A-Z]{10}<\/code>/, label)
    t.notMatch(res.body, CANARY, label)
  }
  t.same(
    (await variableMetas(b.storage, b.vaultId, 'development')).map((v) => v.name),
    ['TAKEN'],
  )
  t.notMatch(b.logs.join('\n'), CANARY)
})

t.test('a viewer sees names but no values and no value forms; their POSTs are refused', async (t) => {
  const b = await build(t)
  const [sealed] = await b.seal('development', { SECRET: CANARY })
  await writeTestValue(
    b.storage,
    { vaultId: b.vaultId, environment: 'development', value: sealed!, by: PEOPLE.owner!.id, now: new Date(), limit: TEST_NO_LIMIT },
    testLogEntry({
      vaultId: b.vaultId,
      at: new Date(),
      personId: PEOPLE.owner!.id,
      signInId: null,
      clientId: null,
      action: 'variable_set',
      environment: 'development',
      names: ['SECRET'],
      address: null,
    }),
  )
  const s = session(b.app, 'viewer')
  const url = `/v/${b.vaultId}`
  const page = { body: (await s.get(url)).body + (await s.get(`${url}/members`)).body, statusCode: (await s.get(url)).statusCode }
  t.equal(page.statusCode, 200)
  t.match(page.body, '<code class="name">SECRET</code>')
  for (const absent of [
    '>Reveal<',
    '>Reveal all<',
    'Add variable',
    '>Delete<',
    '<summary>Change</summary>',
    '>Invite<',
    'Add environment',
    'Change role',
    '>Remove<',
  ]) {
    t.notMatch(page.body, absent, `no ${absent}`)
  }
  t.notMatch(page.body, CANARY)
  await s.get('/') // a page with a form, for a CSRF token: the POSTs below must fail on the role, not on CSRF
  t.ok(s.token)
  const reveal = await s.post(`${url}/reveal`, { environment: 'development', name: 'SECRET' })
  t.equal(reveal.statusCode, 403)
  t.notMatch(reveal.body, CANARY)
  t.match(reveal.body, 'your role (viewer) cannot read values')
  t.equal((await s.post(`${url}/variables/add`, { environment: 'development', name: 'X', value: 'y' })).statusCode, 403)
  t.equal((await s.post(`${url}/variables/delete`, { environment: 'development', name: 'SECRET' })).statusCode, 403)
  t.equal((await s.post(`${url}/members/add`, { email: PEOPLE.outsider!.email, role: 'owner' })).statusCode, 403)
  t.equal((await s.post(`${url}/environments`, { name: 'staging' })).statusCode, 403)
  const log = await b.storage.listAccessLog(b.vaultId, { limit: 5 })
  t.equal(log[0]?.action, 'refused', 'a refused reveal is logged as refused')
  t.same(
    (await variableMetas(b.storage, b.vaultId, 'development')).map((v) => v.name),
    ['SECRET'],
  )
})

t.test('an editor cannot read or change production (owners only)', async (t) => {
  const b = await build(t)
  const [sealed] = await b.seal('production', { DB_URL: CANARY })
  await writeTestValue(
    b.storage,
    { vaultId: b.vaultId, environment: 'production', value: sealed!, by: PEOPLE.owner!.id, now: new Date(), limit: TEST_NO_LIMIT },
    testLogEntry({
      vaultId: b.vaultId,
      at: new Date(),
      personId: PEOPLE.owner!.id,
      signInId: null,
      clientId: null,
      action: 'variable_set',
      environment: 'production',
      names: ['DB_URL'],
      address: null,
    }),
  )
  const s = session(b.app, 'editor')
  const url = `/v/${b.vaultId}`
  const page = await s.get(`${url}?env=production`)
  const prod = page.body.slice(page.body.indexOf('id="env-production"'))
  const prodSection = prod.slice(0, prod.indexOf('</section>'))
  t.match(prodSection, 'owners only')
  t.match(prodSection, 'DB_URL')
  t.notMatch(prodSection, '>Reveal<')
  t.notMatch(prodSection, 'Add variable')
  const dev = await s.get(`${url}?env=development`)
  t.match(dev.body.slice(dev.body.indexOf('id="env-development"')), 'Add variable', 'development is writable')
  t.equal((await s.post(`${url}/reveal`, { environment: 'production', name: 'DB_URL' })).statusCode, 403)
  t.equal((await s.post(`${url}/variables/change`, { environment: 'production', name: 'DB_URL', value: 'x' })).statusCode, 403)
  t.equal((await s.post(`${url}/variables/add`, { environment: 'development', name: 'OK', value: 'x' })).statusCode, 303)
})

t.test('members: an owner adds by email, changes a role, removes; the last owner stays', async (t) => {
  const b = await build(t)
  const s = session(b.app, 'owner')
  const url = `/v/${b.vaultId}`
  await s.get(url)
  t.equal((await s.post(`${url}/members/add`, { email: 'OSCAR@example.test', role: 'viewer' })).statusCode, 303)
  t.equal((await s.post(`${url}/members/add`, { email: PEOPLE.outsider!.email, role: 'viewer' })).statusCode, 409, 'already a member')
  t.equal((await s.post(`${url}/members/add`, { email: 'nobody@example.test', role: 'viewer' })).statusCode, 404)
  t.equal((await s.post(`${url}/members/add`, { email: PEOPLE.hostile!.email, role: 'admin' })).statusCode, 400, 'unknown role')
  t.equal((await s.post(`${url}/members/change`, { person: PEOPLE.outsider!.id, role: 'editor' })).statusCode, 303)
  const roles = async () => Object.fromEntries((await b.storage.listMembers(b.vaultId)).map((m) => [m.personId, m.role]))
  t.equal((await roles())[PEOPLE.outsider!.id], 'editor')
  const demote = await s.post(`${url}/members/change`, { person: PEOPLE.owner!.id, role: 'editor' })
  t.equal(demote.statusCode, 409)
  t.match(demote.body, 'at least one owner')
  t.equal((await s.post(`${url}/members/remove`, { person: PEOPLE.owner!.id })).statusCode, 409)
  t.equal((await roles())[PEOPLE.owner!.id], 'owner')
  t.equal((await s.post(`${url}/members/remove`, { person: PEOPLE.outsider!.id })).statusCode, 303)
  t.equal((await roles())[PEOPLE.outsider!.id], undefined)
  // with a second owner, the first may step down
  await s.post(`${url}/members/change`, { person: PEOPLE.editor!.id, role: 'owner' })
  t.equal((await s.post(`${url}/members/change`, { person: PEOPLE.owner!.id, role: 'editor' })).statusCode, 303)
  t.equal((await roles())[PEOPLE.owner!.id], 'editor')
  const actions = (await b.storage.listAccessLog(b.vaultId, { limit: 50 })).map((l) => l.action)
  t.ok(actions.includes('member_added') && actions.includes('member_changed') && actions.includes('member_removed'))
  const page = await s.get(`${url}/members`)
  t.match(page.body, 'Ed Editor')
  t.match(page.body, 'ed@example.test')
})

t.test('a hostile person name is escaped on the vault page', async (t) => {
  const b = await build(t)
  await b.storage.changeMember(
    { kind: 'set', vaultId: b.vaultId, personId: PEOPLE.hostile!.id, role: 'editor' },
    testLogEntry({ vaultId: b.vaultId, action: 'member_added', subject: PEOPLE.hostile!.id, detail: 'editor' }),
  )
  const page = await session(b.app, 'owner').get(`/v/${b.vaultId}/members`)
  t.notMatch(page.body, '<img src=x')
  t.match(page.body, '&lt;img src=x onerror=alert(1)&gt;')
})

t.test('environments: an owner adds one, optionally owners-only; bad or taken names are refused', async (t) => {
  const b = await build(t)
  const s = session(b.app, 'owner')
  const url = `/v/${b.vaultId}`
  await s.get(url)
  t.equal((await s.post(`${url}/environments`, { name: 'staging', owners_only: 'on' })).statusCode, 303)
  t.equal((await s.post(`${url}/environments`, { name: 'qa' })).statusCode, 303)
  for (const name of ['Staging', '-x', '', 'a'.repeat(64), '<script>']) {
    const res = await s.post(`${url}/environments`, { name })
    t.equal(res.statusCode, 400, name)
    t.notMatch(res.body, '<script>')
  }
  t.equal((await s.post(`${url}/environments`, { name: 'staging' })).statusCode, 409)
  const vault = (await b.storage.listVaults(PEOPLE.owner!.id, { vaultId: b.vaultId }))[0] ?? null
  t.same(
    vault?.environments.filter((e) => e.name === 'staging' || e.name === 'qa'),
    [
      { name: 'qa', ownersOnly: false, secondPerson: false },
      { name: 'staging', ownersOnly: true, secondPerson: true },
    ],
  )
  t.equal((await session(b.app, 'editor').post(`${url}/environments`, { name: 'x' })).statusCode, 403, 'editor (no token) refused')
})

t.test('the access log filters by environment and action', async (t) => {
  const b = await build(t)
  const s = session(b.app, 'owner')
  const url = `/v/${b.vaultId}`
  await s.get(url)
  await s.post(`${url}/variables/add`, { environment: 'development', name: 'DEV_ONLY', value: 'x' })
  await s.post(`${url}/variables/add`, { environment: 'preview', name: 'PREVIEW_ONLY', value: 'x' })
  await s.post(`${url}/reveal`, { environment: 'preview', name: 'PREVIEW_ONLY' })
  const logPart = (body: string) => body.slice(body.indexOf('id="access-log"'))
  const all = logPart((await s.get(`${url}/access-log`)).body)
  t.match(all, 'DEV_ONLY')
  t.match(all, 'PREVIEW_ONLY')
  const preview = logPart((await s.get(`${url}/access-log?environment=preview`)).body)
  t.notMatch(preview, 'DEV_ONLY')
  t.match(preview, 'PREVIEW_ONLY')
  const reads = logPart((await s.get(`${url}/access-log?action=read`)).body)
  t.match(reads, /<span class="action">read<\/span>/)
  t.notMatch(reads, /<span class="action">variable set<\/span>/)
  t.match(reads, '<option value="read" selected>')
})

t.test('an unknown or unshared vault is a 404 error page with the four fields', async (t) => {
  const b = await build(t)
  for (const url of [`/v/${b.vaultId}`, '/v/00000000-0000-4000-8000-000000000000', '/v/%3Cscript%3E']) {
    const res = await session(b.app, 'outsider').get(url)
    t.equal(res.statusCode, 404, url)
    for (const label of ['Error 404', '<dt>What</dt>', '<dt>Where</dt>', '<dt>Why</dt>', '<dt>Reference</dt>', 'Copy details', '<pre id=']) {
      t.match(res.body, label, `${url} ${label}`)
    }
    t.match(res.body, 'database (only what&#39;s shared with you is visible)')
    t.notMatch(res.body, '<script>')
  }
})

t.test('without a key for variables, value forms answer a 503 error page and the rest works', async (t) => {
  const b = await build(t, { noKey: true })
  const s = session(b.app, 'owner')
  const url = `/v/${b.vaultId}`
  t.equal((await s.get(url)).statusCode, 200)
  const add = await s.post(`${url}/variables/add`, { environment: 'development', name: 'A', value: CANARY })
  t.equal(add.statusCode, 503)
  t.match(add.body, '<dt>Where</dt><dd>encryption</dd>')
  t.match(add.body, 'the server has no key for variables')
  t.equal((await s.post(`${url}/reveal`, { environment: 'development' })).statusCode, 503)
  t.equal((await s.post(`${url}/environments`, { name: 'staging' })).statusCode, 303)
})

t.test('pending pushes past their expiry are not offered for review', async (t) => {
  const b = await build(t)
  const id = await b.push('preview', { A: 'x' })
  const s = session(b.app, 'owner')
  t.match((await s.get(`/v/${b.vaultId}/pushes`)).body, id)
  b.clock.now = new Date(b.clock.now.getTime() + 8 * 86_400_000)
  const page = await s.get(`/v/${b.vaultId}/pushes`)
  t.notMatch(page.body, id)
  t.match(page.body, 'No pushes are waiting for review.')
})

t.test('a multi-line value typed into the page is stored with \\n line endings (browsers send CRLF)', async (t) => {
  const b = await build(t)
  const s = session(b.app, 'owner')
  const url = `/v/${b.vaultId}`
  await s.get(url)
  t.equal((await s.post(`${url}/variables/add`, { environment: 'development', name: 'PEM', value: 'line one\r\nline two\r\n' })).statusCode, 303)
  const revealed = await s.post(`${url}/reveal`, { environment: 'development', name: 'PEM' })
  t.match(revealed.body, 'line one\nline two\n')
  t.notMatch(revealed.body, /line one\r/)
})

import t from 'tap'
import { build, PEOPLE, session, TTL } from './helpers.js'
import { testLogEntry, TEST_NO_LIMIT, writeTestValue } from '../../src/testing/index.js'

const CANARY = 'canary-staged-55aa11'

async function withExisting(b: Awaited<ReturnType<typeof build>>, env: string, values: Record<string, string>) {
  for (const v of await b.seal(env, values)) {
    await writeTestValue(
      b.storage,
      { vaultId: b.vaultId, environment: env, value: v, by: PEOPLE.owner!.id, now: b.clock.now, limit: TEST_NO_LIMIT },
      testLogEntry({
        vaultId: b.vaultId,
        at: b.clock.now,
        personId: PEOPLE.owner!.id,
        signInId: null,
        clientId: null,
        action: 'variable_set',
        environment: env,
        names: [v.name],
        address: null,
      }),
    )
  }
}

async function devValues(b: Awaited<ReturnType<typeof build>>, env = 'development') {
  const read = await b.storage.readCurrent(b.vaultId, env)
  return read.variables.map((v) => v.name)
}

t.test('the review page shows environment, sender, times, new/overwrite, refused lines, and Apply/Reject', async (t) => {
  const b = await build(t)
  await withExisting(b, 'development', { OLD: 'old-value' })
  const id = await b.push('development', { OLD: CANARY, NEW_ONE: CANARY }, [
    { line: 3, name: 'bad-name', reason: 'not a valid name' },
    { line: 9, name: '<script>x</script>', reason: 'duplicate of line 12, which was sent' },
  ])
  const url = `/v/${b.vaultId}/variables/imports/${id}`
  const s = session(b.app, 'owner')
  const res = await s.get(url)
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-security-policy'], /default-src 'none'/)
  t.match(res.body, '<dt>Environment</dt><dd>development</dd>')
  t.match(res.body, /<dt>Sender<\/dt><dd><span class="person">Ed Editor<\/span>/)
  t.match(res.body, '<dt>Sent</dt><dd><time datetime="2026-11-21T12:00:00.000Z">')
  t.match(res.body, `<dt>Expires</dt><dd><time datetime="${new Date(Date.parse('2026-11-21T12:00:00.000Z') + TTL).toISOString()}">`)
  t.match(res.body, /<code class="name">OLD<\/code><\/td>\n<td data-label="Change"><span class="mark mark-overwrite">overwrite<\/span>/)
  t.match(res.body, /<code class="name">NEW_ONE<\/code><\/td>\n<td data-label="Change"><span class="mark mark-new">new<\/span>/)
  t.match(
    res.body,
    /<td data-label="Line">3<\/td>\n<td data-label="Name"><code class="name">bad-name<\/code><\/td>\n<td data-label="Reason">not a valid name<\/td>/,
  )
  t.match(res.body, '&lt;script&gt;x&lt;/script&gt;')
  t.notMatch(res.body, '<script>x</script>')
  t.notMatch(res.body, CANARY, 'values hidden until revealed')
  for (const label of ['>Reveal<', '>Apply<', '>Reject<']) t.match(res.body, label)

  const reveal = await s.post(`${url}/reveal`, {})
  t.equal(reveal.statusCode, 200)
  t.match(reveal.body, `<code class="value" data-name="NEW_ONE">${CANARY}</code>`)
  t.match(
    reveal.body,
    '<code class="value current" data-current="OLD"><mark>old-value</mark></code>',
    'an overwrite shows the value it replaces, the change marked',
  )
  t.notMatch(reveal.body, 'data-current="NEW_ONE"')
  const log = await b.storage.listAccessLog(b.vaultId, { limit: 1 })
  t.equal(log[0]?.action, 'read')
  t.same([...(log[0]?.names ?? [])].sort(), ['NEW_ONE', 'OLD'])
  t.notMatch(b.logs.join('\n'), CANARY)
})

t.test('Apply writes every value; the page then shows the outcome and who decided, with no buttons', async (t) => {
  const b = await build(t)
  await withExisting(b, 'development', { OLD: 'old-value' })
  const id = await b.push('development', { OLD: 'new-old', ADDED: 'added' })
  const url = `/v/${b.vaultId}/variables/imports/${id}`
  const s = session(b.app, 'owner')
  await s.get(url)
  b.clock.now = new Date(b.clock.now.getTime() + 60_000)
  const res = await s.post(`${url}/apply`, {})
  t.equal(res.statusCode, 303)
  t.equal(res.headers.location, url)
  t.same(await devValues(b), ['ADDED', 'OLD'])
  const push = await b.storage.getImport(id, b.clock.now)
  t.equal(push?.status, 'applied')
  t.equal(push?.decidedBy, PEOPLE.owner!.id)
  const page = await s.get(url)
  t.match(page.body, /<h2>Applied<\/h2>/)
  t.match(page.body, /Applied <time datetime="2026-11-21T12:01:00.000Z">[^<]+<\/time>, by <span class="person">Olga Owner<\/span>/)
  for (const label of ['>Reveal<', '>Apply<', '>Reject<']) t.notMatch(page.body, label)
  const again = await s.post(`${url}/reject`, {})
  t.equal(again.statusCode, 409, 'a decided push cannot be decided again')
  t.match(again.body, 'this push is already applied')
  t.equal((await b.storage.getImport(id, b.clock.now))?.status, 'applied')
})

t.test('Reject leaves the variables untouched', async (t) => {
  const b = await build(t)
  await withExisting(b, 'development', { OLD: 'old-value' })
  const id = await b.push('development', { OLD: 'new-old', ADDED: 'added' })
  const url = `/v/${b.vaultId}/variables/imports/${id}`
  const s = session(b.app, 'editor')
  await s.get(url)
  t.equal((await s.post(`${url}/reject`, {})).statusCode, 303)
  t.same(await devValues(b), ['OLD'])
  const page = await s.get(url)
  t.match(page.body, /<h2>Rejected<\/h2>/)
  t.match(page.body, 'No variable was changed.')
  t.notMatch(page.body, '>Apply<')
})

t.test('an expired push shows Expired with no buttons; Apply after expiry changes nothing', async (t) => {
  const b = await build(t)
  const id = await b.push('development', { LATE: 'x' })
  const url = `/v/${b.vaultId}/variables/imports/${id}`
  const s = session(b.app, 'owner')
  await s.get(url)
  b.clock.now = new Date(b.clock.now.getTime() + TTL)
  const res = await s.post(`${url}/apply`, {})
  t.equal(res.statusCode, 409)
  t.match(res.body, 'this push is already expired')
  t.same(await devValues(b), [])
  const page = await s.get(url)
  t.match(page.body, /<h2>Expired<\/h2>/)
  t.match(page.body, 'nobody decided before it expired')
  for (const label of ['>Reveal<', '>Apply<', '>Reject<']) t.notMatch(page.body, label)
})

t.test('who may decide: a viewer sees no values and no buttons; an editor cannot decide production', async (t) => {
  const b = await build(t)
  const dev = await b.push('development', { A: CANARY }, [], PEOPLE.owner!.id)
  const prod = await b.push('production', { B: CANARY }, [], PEOPLE.owner!.id)
  const viewer = session(b.app, 'viewer')
  await viewer.get('/')
  const vp = await viewer.get(`/v/${b.vaultId}/variables/imports/${dev}`)
  t.equal(vp.statusCode, 200)
  for (const label of ['>Reveal<', '>Apply<', '>Reject<']) t.notMatch(vp.body, label, `viewer: no ${label}`)
  t.equal((await viewer.post(`/v/${b.vaultId}/variables/imports/${dev}/apply`, {})).statusCode, 403)
  const vr = await viewer.post(`/v/${b.vaultId}/variables/imports/${dev}/reveal`, {})
  t.equal(vr.statusCode, 403)
  t.notMatch(vr.body, CANARY)

  const editor = session(b.app, 'editor')
  const ep = await editor.get(`/v/${b.vaultId}/variables/imports/${prod}`)
  for (const label of ['>Reveal<', '>Apply<', '>Reject<']) t.notMatch(ep.body, label, `editor on production: no ${label}`)
  await editor.get('/')
  const ea = await editor.post(`/v/${b.vaultId}/variables/imports/${prod}/apply`, {})
  t.equal(ea.statusCode, 403)
  t.match(ea.body, 'owners-only')
  t.equal((await b.storage.getImport(prod, b.clock.now))?.status, 'pending')
})

t.test('a push is not found through another vault, by an outsider, or without CSRF', async (t) => {
  const b = await build(t)
  const id = await b.push('development', { A: 'x' })
  const outsider = session(b.app, 'outsider')
  t.equal((await outsider.get(`/v/${b.vaultId}/variables/imports/${id}`)).statusCode, 404)
  const owner = session(b.app, 'owner')
  await owner.get('/')
  const other = await owner.post('/vaults', { name: 'Other' })
  const otherId = String(other.headers.location).slice(3)
  t.equal((await owner.get(`/v/${otherId}/variables/imports/${id}`)).statusCode, 404)
  t.equal((await owner.post(`/v/${otherId}/variables/imports/${id}/apply`, {})).statusCode, 404)
  t.equal((await owner.post(`/v/${b.vaultId}/variables/imports/${id}/apply`, {}, { csrf: false })).statusCode, 403)
  t.equal((await b.storage.getImport(id, b.clock.now))?.status, 'pending')
})

t.test("the vault's Pushes page lists pending pushes with a link to review; the tab says how many", async (t) => {
  const b = await build(t)
  const id = await b.push('preview', { A: 'x' })
  const page = await session(b.app, 'viewer').get(`/v/${b.vaultId}/pushes`)
  t.match(page.body, `href="/v/${b.vaultId}/variables/imports/${id}">Review</a>`)
  t.match((await session(b.app, 'viewer').get(`/v/${b.vaultId}`)).body, '>Pushes (1)</a>')
})

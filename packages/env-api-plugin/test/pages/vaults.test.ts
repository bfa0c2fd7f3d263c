import t from 'tap'
import { build, PEOPLE, session } from './helpers.js'

t.test('not signed in: every page redirects to the sign-in page with the way back', async (t) => {
  const b = await build(t)
  for (const url of ['/', `/v/${b.vaultId}`, '/sign-ins', `/v/${b.vaultId}/variables/imports/00000000-0000-4000-8000-000000000000`]) {
    const res = await b.app.inject({ method: 'GET', url })
    t.equal(res.statusCode, 303, url)
    t.equal(res.headers.location, `/login?return_to=${encodeURIComponent(url)}`, url)
  }
})

t.test('the vault list shows each vault with its role, and the create form', async (t) => {
  const b = await build(t)
  const s = session(b.app, 'editor')
  const res = await s.get('/')
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /text\/html/)
  t.match(res.headers['content-security-policy'], /script-src 'self'/)
  t.equal(res.headers['cache-control'], 'no-store, private')
  t.match(res.body, `href="/v/${b.vaultId}">Acme</a>`)
  t.match(res.body, /class="role role-editor">editor</)
  t.match(res.body, /<label for="vault-name">Vault name<\/label>/)
  t.match(res.body, />Create vault</)
  t.notMatch(res.body, /<script>|style=/, 'no inline script or style')
  const csrf = res.cookies.find((c) => c.name === 'envkeep_csrf')
  t.ok(csrf, 'CSRF secret cookie set')
  t.equal(csrf?.httpOnly, true)
  t.equal(csrf?.sameSite, 'Lax')
  t.equal((await session(b.app, 'outsider').get('/')).body.includes('Acme'), false, 'an outsider does not see it')
})

t.test('creating a vault makes the person its owner with the three environments', async (t) => {
  const b = await build(t)
  const s = session(b.app, 'outsider')
  await s.get('/')
  const res = await s.post('/vaults', { name: '<script>alert(1)</script>' })
  t.equal(res.statusCode, 303)
  const m = /^\/v\/([0-9a-f-]{36})$/.exec(String(res.headers.location))
  t.ok(m, 'redirects to the new vault')
  const vault = (await b.storage.listVaults(PEOPLE.outsider!.id, { vaultId: m![1]! }))[0] ?? null
  t.equal(vault?.role, 'owner')
  t.same(vault?.environments, [
    { name: 'development', ownersOnly: false, secondPerson: false },
    { name: 'preview', ownersOnly: false, secondPerson: false },
    { name: 'production', ownersOnly: true, secondPerson: true },
  ])
  const list = await s.get('/')
  t.notMatch(list.body, '<script>alert(1)</script>', 'the name is escaped')
  t.match(list.body, '&lt;script&gt;alert(1)&lt;/script&gt;')
  const page = await s.get(String(res.headers.location))
  t.notMatch(page.body, '<script>alert(1)</script>')
  t.match(page.body, '<h1>&lt;script&gt;alert(1)&lt;/script&gt;</h1>')
})

t.test('creating a vault: refusals show on top of the page, ending with the reference', async (t) => {
  const b = await build(t)
  const s = session(b.app, 'owner')
  await s.get('/')
  for (const name of ['', '   ', 'x'.repeat(101), 'a\u0007b']) {
    const res = await s.post('/vaults', { name })
    t.equal(res.statusCode, 400, JSON.stringify(name))
    t.match(res.body, /role="alert"/)
    t.match(res.body, /Creating a vault failed: [^<]+\. Reference: <code>[0-9A-HJKMNP-TV-Z]{10}<\/code>/)
    t.match(res.body, />Copy details</)
  }
  t.equal((await b.storage.listVaults(PEOPLE.owner!.id)).length, 1, 'nothing created')
})

t.test('a POST without a CSRF token, or with a wrong one, is refused with a 403 error page', async (t) => {
  const b = await build(t)
  const s = session(b.app, 'owner')
  await s.get('/')
  for (const csrf of [false, 'forged-token'] as const) {
    const res = await s.post('/vaults', { name: 'Sneaky' }, { csrf })
    t.equal(res.statusCode, 403, String(csrf))
    t.match(res.body, /Error 403/)
    t.match(res.body, /Reference/)
    t.equal(
      res.headers['content-security-policy'],
      "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    )
  }
  // no secret cookie at all
  const fresh = session(b.app, 'owner')
  const res = await fresh.post('/vaults', { name: 'Sneaky' }, { csrf: s.token })
  t.equal(res.statusCode, 403)
  t.equal((await b.storage.listVaults(PEOPLE.owner!.id)).length, 1, 'nothing created')
})

t.test('the assets are served with their types; nothing else under /assets', async (t) => {
  const b = await build(t)
  const css = await b.app.inject('/assets/envkeep.css')
  t.equal(css.statusCode, 200)
  t.match(css.headers['content-type'], /text\/css/)
  const js = await b.app.inject('/assets/envkeep.js')
  t.equal(js.statusCode, 200)
  t.match(js.headers['content-type'], /text\/javascript/)
  t.match(js.body, /data-copy/)
  t.equal((await b.app.inject('/assets/..%2fpackage.json')).statusCode, 404)
  t.equal((await b.app.inject('/assets/constructor')).statusCode, 404)
})

t.test('under a base path, pages, links, forms and assets carry it', async (t) => {
  const b = await build(t, { baseUrl: 'http://127.0.0.1/envkeep' })
  const s = session(b.app, 'owner')
  const list = await s.get('/envkeep/')
  t.equal(list.statusCode, 200)
  t.match(list.body, `href="/envkeep/v/${b.vaultId}"`)
  t.match(list.body, 'action="/envkeep/vaults"')
  t.match(list.body, 'href="/envkeep/assets/envkeep.css"')
  t.equal((await b.app.inject('/envkeep/assets/envkeep.js')).statusCode, 200)
  t.equal((await b.app.inject({ url: '/', headers: { 'x-test-person': PEOPLE.owner!.id } })).statusCode, 404, 'nothing at the host root')
  const vault = await s.get(`/envkeep/v/${b.vaultId}`)
  t.match(vault.body, `action="/envkeep/v/${b.vaultId}/variables/add#env-development"`)
  const res = await s.post(`/envkeep/v/${b.vaultId}/variables/add`, { environment: 'development', name: 'A', value: 'b' })
  t.equal(res.statusCode, 303)
  t.equal(res.headers.location, `/envkeep/v/${b.vaultId}?env=development&done=variable_added#env-development`)
  t.match(vault.body, `href="/envkeep/v/${b.vaultId}/members"`, 'the tab bar carries the base path')
  const anon = await b.app.inject('/envkeep/sign-ins')
  t.equal(anon.headers.location, `/login?return_to=${encodeURIComponent('/envkeep/sign-ins')}`)
})

import t from 'tap'
import { build, PEOPLE, session } from './helpers.js'

// Issue 14, item 3: the vault's pages behind a tab bar; one environment at a time; Find a
// variable; Edit that reveals (logged) and pre-fills; the access log filtered by person.

t.test('one environment at a time, with a switcher; Find a variable filters by name', async (t) => {
  const b = await build(t)
  const s = session(b.app, 'owner')
  const url = `/v/${b.vaultId}`
  await s.get(url)
  for (const [env, name] of [
    ['development', 'DATABASE_URL'],
    ['development', 'API_KEY'],
    ['preview', 'PREVIEW_ONLY'],
  ] as const) {
    t.equal((await s.post(`${url}/variables/add`, { environment: env, name, value: 'x' })).statusCode, 303)
  }
  const dev = await s.get(`${url}?env=development`)
  t.match(dev.body, '<code class="name">DATABASE_URL</code>')
  t.notMatch(dev.body, 'PREVIEW_ONLY', 'other environments are a click away, not on this page')
  t.match(dev.body, /<a href="\/v\/[^"]+\?env=development" aria-current="true" class="current">development<\/a>/)
  const preview = await s.get(`${url}?env=preview`)
  t.match(preview.body, 'PREVIEW_ONLY')
  t.notMatch(preview.body, 'DATABASE_URL')
  t.match(dev.body, `href="${url}/paste?environment=development">Paste a .env</a>`)
  t.notMatch((await session(b.app, 'viewer').get(url)).body, 'Paste a .env', 'a viewer cannot push')
  const found = await s.get(`${url}?env=development&q=data`)
  t.match(found.body, 'DATABASE_URL')
  t.notMatch(found.body, '<code class="name">API_KEY</code>')
  t.match(found.body, '1 of 2')
  // the default is the first environment the person may read (an editor never lands on production)
  const editor = await session(b.app, 'editor').get(url)
  t.match(editor.body, 'id="env-development"')
  t.notMatch(editor.body, 'id="env-production"')
})

t.test('Edit reveals the value (logged as a read) and opens the change form with it', async (t) => {
  const b = await build(t)
  const s = session(b.app, 'owner')
  const url = `/v/${b.vaultId}`
  await s.get(url)
  await s.post(`${url}/variables/add`, { environment: 'development', name: 'PEM', value: 'line one\nline <two>' })
  const page = await s.get(`${url}?env=development`)
  t.match(page.body, 'name="edit" value="1"')
  const edit = await s.post(`${url}/reveal`, { environment: 'development', name: 'PEM', edit: '1' })
  t.equal(edit.statusCode, 200)
  t.match(edit.body, '<details open><summary>Change</summary>')
  t.match(edit.body, /<textarea id="change-development-PEM" name="value"[^>]*>line one\nline &lt;two&gt;<\/textarea>/)
  const [entry] = await b.storage.listAccessLog(b.vaultId, { limit: 1 })
  t.equal(entry?.action, 'read')
  t.same(entry?.names, ['PEM'])
  // a plain Reveal does not open the form
  const reveal = await s.post(`${url}/reveal`, { environment: 'development', name: 'PEM' })
  t.notMatch(reveal.body, '<details open>')
})

t.test('the access log filters by person too; Pushes lists the decided ones below the pending', async (t) => {
  const b = await build(t)
  const owner = session(b.app, 'owner')
  const editor = session(b.app, 'editor')
  const url = `/v/${b.vaultId}`
  await owner.get(url)
  await editor.get(url)
  await owner.post(`${url}/variables/add`, { environment: 'development', name: 'BY_OWNER', value: 'x' })
  await editor.post(`${url}/variables/add`, { environment: 'development', name: 'BY_EDITOR', value: 'x' })
  const mine = await owner.get(`${url}/access-log?person=${PEOPLE.editor!.id}`)
  const table = mine.body.slice(mine.body.indexOf('<table class="stack log">'))
  t.match(table, 'BY_EDITOR')
  t.notMatch(table, 'BY_OWNER')
  t.match(mine.body, `<option value="${PEOPLE.editor!.id}" selected>Ed Editor</option>`)
  const stranger = await owner.get(`${url}/access-log?person=someone-else`)
  t.match(stranger.body.slice(stranger.body.indexOf('<table class="stack log">')), 'BY_OWNER', 'an unknown person is no filter')

  const id = await b.push('development', { P: 'x' })
  await owner.get(`${url}/variables/imports/${id}`)
  await owner.post(`${url}/variables/imports/${id}/reject`, { reason: 'not now' })
  const pushes = await owner.get(`${url}/pushes`)
  t.match(pushes.body, 'No pushes are waiting for review.')
  t.match(pushes.body.slice(pushes.body.indexOf('Decided lately')), `href="/v/${b.vaultId}/variables/imports/${id}">Open</a>`)
})

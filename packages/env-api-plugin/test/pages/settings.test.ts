import t from 'tap'
import { randomUUID } from 'node:crypto'
import { testLogEntry } from '../../src/testing/index.js'
import { storageUnderTest } from '../storage-under-test.js'
import { build, PEOPLE, session } from './helpers.js'

// Issue 14, items 2 and 4: vault names unique (case-insensitive) among the vaults a person
// reaches, Rename, Delete vault (typed name, audit line), "Require a second person" per
// environment, a reason on Reject, the changed part of an overwrite marked.

t.test('rename: owners only, names unique regardless of case, logged', async (t) => {
  const b = await build(t, { storage: await storageUnderTest(t) })
  const owner = session(b.app, 'owner')
  const page = await owner.get(`/v/${b.vaultId}/settings`)
  t.equal(page.statusCode, 200)
  for (const label of ['>Rename<', '>Delete vault<', 'Require a second person', 'Owners only']) t.match(page.body, label)
  // a second vault of the owner's, named "Other"
  t.equal((await owner.post('/vaults', { name: 'Other' })).statusCode, 303)
  t.equal((await owner.post('/vaults', { name: 'acme' })).statusCode, 409, 'a new vault may not take a name the person has (any case)')
  const clash = await owner.post(`/v/${b.vaultId}/settings/rename`, { name: 'OTHER' })
  t.equal(clash.statusCode, 409)
  t.match(clash.body, 'a vault you can reach already has that name')
  t.notMatch(clash.body, 'Other', 'the other vault is not named (issue 25)')
  const done = await owner.post(`/v/${b.vaultId}/settings/rename`, { name: 'Acme Shop' })
  t.equal(done.statusCode, 303)
  t.equal((await b.storage.listVaults(PEOPLE.owner!.id, { vaultId: b.vaultId }))[0]?.name, 'Acme Shop')
  const [entry] = await b.storage.listAccessLog(b.vaultId, { limit: 1 })
  t.equal(entry?.action, 'vault_renamed')
  t.equal(entry?.detail, 'Acme Shop')
  const editor = session(b.app, 'editor')
  const editorPage = await editor.get(`/v/${b.vaultId}/settings`)
  t.notMatch(editorPage.body, '>Delete vault<', 'an editor is not offered the owner forms')
  t.equal((await editor.post(`/v/${b.vaultId}/settings/rename`, { name: 'Mine' })).statusCode, 403)
  t.equal((await b.storage.listVaults(PEOPLE.owner!.id, { vaultId: b.vaultId }))[0]?.name, 'Acme Shop')
})

t.test('adding a member who already reaches a vault of that name is refused', async (t) => {
  const b = await build(t, { storage: await storageUnderTest(t) })
  const theirs = randomUUID()
  await b.storage.createVault(
    {
      id: theirs,
      name: 'ACME',
      ownerId: PEOPLE.outsider!.id,
      plan: 'self-hosted',
      environments: [{ name: 'development', ownersOnly: false }],
      now: b.clock.now,
    },
    testLogEntry({ vaultId: theirs, action: 'vault_created' }),
  )
  const owner = session(b.app, 'owner')
  await owner.get(`/v/${b.vaultId}`)
  const r = await owner.post(`/v/${b.vaultId}/members/add`, { email: PEOPLE.outsider!.email, role: 'editor' })
  t.equal(r.statusCode, 409)
  t.match(r.body, 'a vault they can reach already has that name')
  t.notMatch(r.body, 'ACME', 'their vault is not named, not even its spelling (issue 25)')
  t.same((await b.storage.listMembers(b.vaultId)).map((m) => m.personId).includes(PEOPLE.outsider!.id), false)
})

t.test('delete: the typed name, then everything goes and one audit line stays', async (t) => {
  const b = await build(t, { storage: await storageUnderTest(t) })
  await b.push('development', { A: 'canary-delete-a' })
  const owner = session(b.app, 'owner')
  await owner.get(`/v/${b.vaultId}/settings`)
  t.equal((await session(b.app, 'editor').post(`/v/${b.vaultId}/settings/delete`, { confirm: 'Acme' })).statusCode, 403)
  const wrong = await owner.post(`/v/${b.vaultId}/settings/delete`, { confirm: 'acme' })
  t.equal(wrong.statusCode, 400, 'the exact name is asked for')
  t.match(wrong.body, 'type the vault&#39;s name, Acme, to delete it')
  t.ok((await b.storage.listVaults(PEOPLE.owner!.id, { vaultId: b.vaultId }))[0] ?? null, 'nothing deleted')
  const done = await owner.post(`/v/${b.vaultId}/settings/delete`, { confirm: 'Acme' })
  t.equal(done.statusCode, 303)
  t.equal(done.headers.location, '/?done=vault_deleted')
  t.match((await owner.get('/?done=vault_deleted')).body, 'The vault was deleted.')
  t.equal((await b.storage.listVaults(PEOPLE.owner!.id, { vaultId: b.vaultId }))[0] ?? null, null)
  t.same(await b.storage.listAccessLog(b.vaultId, { limit: 5 }), [])
  t.same(await b.storage.listImports(b.vaultId, { limit: 5 }), [])
  const [audit] = await b.storage.listAudit({ limit: 1 })
  t.same(
    { who: audit?.personId, what: audit?.action, vault: audit?.vaultId, name: audit?.vaultName },
    {
      who: PEOPLE.owner!.id,
      what: 'vault_deleted',
      vault: b.vaultId,
      name: 'Acme',
    },
  )
  t.equal((await owner.get(`/v/${b.vaultId}`)).statusCode, 404)
})

t.test('Require a second person: on for owners-only environments, switchable per environment', async (t) => {
  const b = await build(t, { storage: await storageUnderTest(t) })
  const owner = session(b.app, 'owner')
  // the owner sends to production and may not decide it: the page says why
  const own = await b.push('production', { P: 'canary-second-person' }, [], PEOPLE.owner!.id)
  const review = await owner.get(`/v/${b.vaultId}/variables/imports/${own}`)
  t.notMatch(review.body, '>Apply<')
  t.match(review.body, 'production requires a second person: someone else with write access must apply or reject your push.')
  t.equal((await owner.post(`/v/${b.vaultId}/variables/imports/${own}/apply`, {})).statusCode, 403)
  // on development (shared) the sender may decide
  const dev = await b.push('development', { D: 'x' }, [], PEOPLE.editor!.id)
  await session(b.app, 'editor').get(`/v/${b.vaultId}/variables/imports/${dev}`)
  // the switch: off for production, on for development
  await owner.get(`/v/${b.vaultId}/settings`)
  t.equal((await owner.post(`/v/${b.vaultId}/settings/environment`, { environment: 'production', owners_only: 'on' })).statusCode, 303)
  const editor = session(b.app, 'editor')
  await editor.get(`/v/${b.vaultId}/settings`)
  t.equal((await editor.post(`/v/${b.vaultId}/settings/environment`, { environment: 'development', second_person: 'on' })).statusCode, 403)
  t.equal((await owner.post(`/v/${b.vaultId}/settings/environment`, { environment: 'development', second_person: 'on' })).statusCode, 303)
  const envs = Object.fromEntries(
    ((await b.storage.listVaults(PEOPLE.owner!.id, { vaultId: b.vaultId }))[0]?.environments ?? []).map((e) => [e.name, e.secondPerson]),
  )
  t.same(envs, { development: true, preview: false, production: false })
  await owner.get(`/v/${b.vaultId}/variables/imports/${own}`)
  t.equal((await owner.post(`/v/${b.vaultId}/variables/imports/${own}/apply`, {})).statusCode, 303, 'now the owner may apply their own')
  await editor.get(`/v/${b.vaultId}/variables/imports/${dev}`)
  t.equal((await editor.post(`/v/${b.vaultId}/variables/imports/${dev}/apply`, {})).statusCode, 403, 'and the editor no longer their own')
  t.equal((await b.storage.listAccessLog(b.vaultId, { action: 'environment_changed', limit: 5 })).length, 2)
})

t.test('Reject with a reason, shown on the decided page; overwrites show the changed part marked', async (t) => {
  const b = await build(t, { storage: await storageUnderTest(t) })
  const owner = session(b.app, 'owner')
  const first = await b.push('development', { URL: 'https://db.example.com:5432/app' })
  await owner.get(`/v/${b.vaultId}/variables/imports/${first}`)
  await owner.post(`/v/${b.vaultId}/variables/imports/${first}/apply`, {})
  const second = await b.push('development', { URL: 'https://db.example.org:5432/app' })
  const page = await owner.get(`/v/${b.vaultId}/variables/imports/${second}`)
  t.match(page.body, 'Variables of development that are not in this push stay as they are.')
  t.match(page.body, '<label for="reject-reason">Reason')
  const shown = await owner.post(`/v/${b.vaultId}/variables/imports/${second}/reveal`, {})
  t.match(shown.body, '<code class="value" data-name="URL">https://db.example.<mark>org</mark>:5432/app</code>')
  t.match(shown.body, '<code class="value current" data-current="URL">https://db.example.<mark>com</mark>:5432/app</code>')
  t.equal((await owner.post(`/v/${b.vaultId}/variables/imports/${second}/reject`, { reason: 'x'.repeat(501) })).statusCode, 400, 'a reason has a limit')
  const r = await owner.post(`/v/${b.vaultId}/variables/imports/${second}/reject`, { reason: 'wrong <domain>, use .com' })
  t.equal(r.statusCode, 303)
  const decided = await owner.get(`/v/${b.vaultId}/variables/imports/${second}`)
  t.match(decided.body, '<p class="reason">Reason: wrong &lt;domain&gt;, use .com</p>')
  t.equal((await b.storage.getImport(second, b.clock.now))?.reason, 'wrong <domain>, use .com')
})

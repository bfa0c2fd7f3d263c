import t from 'tap'
import { build, session } from '../pages/helpers.js'
import { domainOf, ownerActor } from './helpers.js'

// Webhooks are the owners': editors and viewers are refused the page and its forms (403),
// outsiders see no vault (404); only owners get the link, in the vault's Settings (issue 25).

t.test('owners only', async (t) => {
  const b = await build(t, { plugin: { allowPrivateWebhooks: true } })
  const { webhook } = await domainOf(b).addWebhook(ownerActor, { vaultId: b.vaultId, url: 'http://127.0.0.1:9/x', format: 'generic', events: ['push.created'] })
  const base = `/v/${b.vaultId}/webhooks`
  const owner = session(b.app, 'owner')
  t.equal((await owner.get(base)).statusCode, 200)
  t.match((await owner.get(`/v/${b.vaultId}/settings`)).body, `href="${base}">Webhooks</a>`, 'the link, for owners, in Settings')
  t.notMatch((await owner.get(`/v/${b.vaultId}`)).body, `${base}"`, 'not on the vault page’s header any more')
  for (const [who, status] of [
    ['editor', 403],
    ['viewer', 403],
    ['outsider', 404],
  ] as const) {
    const s = session(b.app, who)
    const settings = await s.get(`/v/${b.vaultId}/settings`)
    if (who !== 'outsider') t.notMatch(settings.body, `${base}"`, `no link for the ${who}`)
    const page = await s.get(base)
    t.equal(page.statusCode, status, `${who}: the page`)
    t.notMatch(page.body, '127.0.0.1:9', `${who} sees no webhook`)
    await s.get('/') // a page with a form, for the CSRF token
    t.ok(s.token)
    t.equal((await s.post(`${base}/add`, { url: 'http://127.0.0.1:9/y', format: 'generic', events: 'push.created' })).statusCode, status, `${who}: add`)
    t.equal((await s.post(`${base}/remove`, { webhook: webhook.id })).statusCode, status, `${who}: remove`)
  }
  t.same(
    (await b.storage.listWebhooks(b.vaultId)).map((w) => w.id),
    [webhook.id],
    'nothing added or removed',
  )
  // a form without the CSRF token is refused too
  t.equal((await owner.post(`${base}/remove`, { webhook: webhook.id }, { csrf: false })).statusCode, 403)
  t.equal((await owner.post(`${base}/remove`, { webhook: webhook.id })).statusCode, 303)
  t.same(await b.storage.listWebhooks(b.vaultId), [])
  t.equal((await owner.post(`${base}/remove`, { webhook: webhook.id })).statusCode, 404, 'an unknown webhook')
})

t.test('a bad format or no event is refused on the page, and the form is shown again', async (t) => {
  const b = await build(t, { plugin: { allowPrivateWebhooks: true } })
  const owner = session(b.app, 'owner')
  await owner.get(`/v/${b.vaultId}/webhooks`)
  const noEvent = await owner.post(`/v/${b.vaultId}/webhooks/add`, { url: 'http://127.0.0.1:9/x', format: 'generic' })
  t.equal(noEvent.statusCode, 400)
  t.match(noEvent.body, 'choose at least one event')
  t.match(noEvent.body, 'Add webhook')
  const badFormat = await owner.post(`/v/${b.vaultId}/webhooks/add`, { url: 'http://127.0.0.1:9/x', format: 'teams', events: 'push.created' })
  t.equal(badFormat.statusCode, 400)
  t.same(await b.storage.listWebhooks(b.vaultId), [])
})

import { createHmac, timingSafeEqual } from 'node:crypto'
import t from 'tap'
import { verifyWebhookSignature, type GenericBody } from '../../src/index.js'
import { build, PEOPLE, session } from '../pages/helpers.js'
import { attemptsRecorded, domainOf, editorActor, receiver } from './helpers.js'

// Issue 14, item 5: an owner adds a webhook on its page; a push created and then applied
// reach a local receiver as signed generic JSON, with names, never a value; the page lists
// the deliveries; nothing secret reaches the log.

const VALUE = 'canary-value-7f3a9c'
const PATH = '/hooks/path-canary-51d2'

// as a receiver would, by hand: HMAC-SHA256 of "<x-envkeep-timestamp>.<raw body>" (issue 25: the
// timestamp is inside the MAC, so a delivery replayed under another time fails)
function verify(secret: string, got: { body: string; headers: Record<string, string | string[] | undefined> }, timestamp?: string): boolean {
  const ts = timestamp ?? got.headers['x-envkeep-timestamp']
  const header = got.headers['x-envkeep-signature']
  if (typeof ts !== 'string' || typeof header !== 'string') return false
  const expected = Buffer.from(`sha256=${createHmac('sha256', secret).update(`${ts}.${got.body}`).digest('hex')}`)
  const sent = Buffer.from(header)
  return sent.length === expected.length && timingSafeEqual(sent, expected)
}

t.test('push.created and push.decided are delivered, signed, to a local receiver', async (t) => {
  const hook = await receiver(t)
  const b = await build(t, { plugin: { allowPrivateWebhooks: true, webhookIntervalMs: 25 } })
  const owner = session(b.app, 'owner')
  await owner.get(`/v/${b.vaultId}/webhooks`)
  const added = await owner.post(`/v/${b.vaultId}/webhooks/add`, { url: `${hook.url}${PATH}`, format: 'generic', events: 'push.created' })
  t.equal(added.statusCode, 200, 'the page, with the secret, answers the form')
  t.equal(added.headers['cache-control'], 'no-store, private')
  const secret = /id="webhook-secret">(whsec_[A-Za-z0-9_-]{43})</.exec(added.body)?.[1]
  t.ok(secret, 'the signing secret is shown once')
  // both events: the form's repeated field
  const again = await b.app.inject({
    method: 'POST',
    url: `/v/${b.vaultId}/webhooks/add`,
    headers: { cookie: [...owner.cookies].map(([k, v]) => `${k}=${v}`).join('; '), 'content-type': 'application/x-www-form-urlencoded' },
    payload: `_csrf=${encodeURIComponent(owner.token)}&url=${encodeURIComponent(`${hook.url}/second`)}&format=generic&events=push.decided`,
  })
  t.equal(again.statusCode, 200)
  const secret2 = /id="webhook-secret">(whsec_[A-Za-z0-9_-]{43})</.exec(again.body)?.[1]
  t.ok(secret2)
  t.not(secret2, secret, 'each webhook has its own secret')

  const domain = domainOf(b)
  // both deliveries recorded (after the receiver answered): the store's signal for the page below
  const recorded = attemptsRecorded(b.storage, 2)
  const push = await domain.createPush(editorActor, {
    vaultId: b.vaultId,
    environment: 'development',
    body: { variables: { API_KEY: VALUE, DEBUG: 'true-canary' } },
  })
  const [created] = await hook.waitFor(1)
  t.ok(created, 'push.created delivered')
  t.equal(created!.method, 'POST')
  t.equal(created!.path, PATH)
  t.equal(created!.headers['content-type'], 'application/json')
  t.equal(created!.headers['x-envkeep-event'], 'push.created')
  t.ok(verify(secret!, created!), 'signed with the first webhook’s secret')
  t.notOk(verify(secret2!, created!), 'and not with another')
  const ts = created!.headers['x-envkeep-timestamp'] as string
  t.notOk(verify(secret!, created!, String(Number(ts) + 3600)), 'the same signature under another timestamp does not verify')
  const sig = created!.headers['x-envkeep-signature'] as string
  const now = new Date(Number(ts) * 1000)
  t.ok(verifyWebhookSignature({ secret: secret!, body: created!.body, timestamp: ts, signature: sig, now }), 'the exported check agrees')
  t.notOk(
    verifyWebhookSignature({
      secret: secret!,
      body: created!.body,
      timestamp: String(Number(ts) + 3600),
      signature: sig,
      now: new Date(now.getTime() + 3_600_000),
    }),
    'a replay under a fresh time fails',
  )
  t.notOk(
    verifyWebhookSignature({ secret: secret!, body: created!.body, timestamp: ts, signature: sig, now: new Date(now.getTime() + 3_600_000) }),
    'an old delivery is refused',
  )
  t.match(created!.headers['x-envkeep-timestamp'], /^[0-9]{10}$/)
  const body = JSON.parse(created!.body) as GenericBody
  t.same(body, {
    event: 'push.created',
    delivery: body.delivery,
    vault: { id: b.vaultId, name: 'Acme' },
    environment: 'development',
    push: { id: push.id, names: ['API_KEY', 'DEBUG'] },
    who: { id: PEOPLE.editor!.id, name: 'Ed Editor' },
    decision: null,
    reviewUrl: `http://127.0.0.1/v/${b.vaultId}/variables/imports/${push.id}`,
    time: b.clock.now.toISOString(),
  })
  t.notMatch(created!.body, VALUE, 'never a value')
  t.notMatch(created!.body, 'true-canary')

  // applied on the review page: push.decided, to the second webhook only
  const review = `/v/${b.vaultId}/variables/imports/${push.id}`
  await owner.get(review)
  t.equal((await owner.post(`${review}/apply`, {})).statusCode, 303)
  const got = await hook.waitFor(2)
  t.equal(got.length, 2)
  const decided = got[1]!
  t.equal(decided.path, '/second')
  t.ok(verify(secret2!, decided))
  const d = JSON.parse(decided.body) as GenericBody
  t.same([d.event, d.decision, d.who, d.push.id], ['push.decided', 'applied', { id: PEOPLE.owner!.id, name: 'Olga Owner' }, push.id])
  t.notMatch(decided.body, VALUE)

  // the page lists the deliveries, without the secret or the URL's path
  await recorded
  const page = await owner.get(`/v/${b.vaultId}/webhooks`)
  t.equal(page.statusCode, 200)
  t.equal((page.body.match(/class="delivery delivery-delivered">delivered</g) ?? []).length, 2, 'each delivery listed as delivered')
  t.match(page.body, /HTTP 200/)
  t.match(page.body, /<code>push\.created<\/code>/)
  t.notMatch(page.body, secret!, 'the secret is not shown again')
  t.notMatch(page.body, 'path-canary', 'nor the URL beyond its first segment')
  t.match(page.body, `${hook.url}/hooks/…`)

  const logs = b.logs.join('\n')
  t.match(logs, /webhook delivered/, 'deliveries are logged')
  for (const secretThing of [secret!, secret2!, VALUE, 'path-canary', 'true-canary']) t.notMatch(logs, secretThing, 'nothing secret in the log')

  // removed: gone from the page, nothing more delivered
  const id = /name="webhook" value="([^"]+)"/.exec(page.body)?.[1]
  t.equal((await owner.post(`/v/${b.vaultId}/webhooks/remove`, { webhook: id! })).statusCode, 303)
  t.equal((await b.storage.listWebhooks(b.vaultId)).length, 1)
})

t.test('an expired push is swept and delivered as push.expired; the Slack format says the same in text, no value', async (t) => {
  const hook = await receiver(t)
  const b = await build(t, { vaultName: 'Shop <&> co', plugin: { allowPrivateWebhooks: true, webhookIntervalMs: 25 } })
  const domain = domainOf(b)
  const owner = (await import('./helpers.js')).ownerActor
  await domain.addWebhook(owner, { vaultId: b.vaultId, url: `${hook.url}/slack`, format: 'slack', events: ['push.created', 'push.expired'] })
  const push = await domain.createPush(editorActor, { vaultId: b.vaultId, environment: 'development', body: { variables: { TOKEN: VALUE } } })
  const [created] = await hook.waitFor(1)
  t.equal(created?.headers['x-envkeep-signature'], undefined, 'Slack deliveries are not signed')
  const text = (JSON.parse(created!.body) as { text: string }).text
  t.equal(
    text,
    `Ed Editor pushed 1 variable (TOKEN) to *development* of vault *Shop &lt;&amp;&gt; co*; it waits for review. <http://127.0.0.1/v/${b.vaultId}/variables/imports/${push.id}|Review>`,
  )
  b.clock.now = new Date(b.clock.now.getTime() + 8 * 86_400_000)
  t.same(await b.storage.expireImports(b.clock.now), { ok: true, value: 1 })
  // the sweep (as the worker runs it every minute)
  const { sweepWebhookEvents, deliverDueWebhooks } = await import('../../src/index.js')
  t.equal(await sweepWebhookEvents({ domain: domainOf(b) }), 1)
  const got = await hook.waitFor(2)
  const expired = JSON.parse(got[1]!.body) as { text: string }
  t.match(expired.text, /^A push of 1 variable \(TOKEN\) to \*development\* of vault .* expired without a decision\./)
  t.notMatch(got[1]!.body, VALUE)
  t.ok(deliverDueWebhooks, 'exported for hosts')
})

t.test('push.expired arrives when the push expires, not a sweep or two later (issue 25)', async (t) => {
  const hook = await receiver(t)
  // the expiry runs every 20 ms here (5 s by default); the webhook sweep still once a minute
  const b = await build(t, { plugin: { allowPrivateWebhooks: true, webhookIntervalMs: 25, expiryIntervalMs: 20 } })
  const domain = domainOf(b)
  const owner = (await import('./helpers.js')).ownerActor
  await domain.addWebhook(owner, { vaultId: b.vaultId, url: `${hook.url}/expired`, format: 'slack', events: ['push.expired'] })
  const push = await domain.createPush(editorActor, { vaultId: b.vaultId, environment: 'development', body: { variables: { TOKEN: VALUE } } })
  // past its end: nothing here expires it or sweeps; the plugin's own timers must
  b.clock.now = new Date(push.expiresAt.getTime() + 1)
  const [got] = await hook.waitFor(1, 10_000)
  t.ok(got, 'push.expired delivered without waiting for the minute sweeps')
  t.match((JSON.parse(got!.body) as { text: string }).text, /expired without a decision/)
  t.equal((await b.storage.getImport(push.id, b.clock.now))?.status, 'expired')
})

t.test('after the vault’s data key is rotated, deliveries are still signed with the same secret', async (t) => {
  const hook = await receiver(t)
  const b = await build(t, { plugin: { allowPrivateWebhooks: true, webhookIntervalMs: 3_600_000 } })
  const domain = domainOf(b)
  const { secret } = await domain.addWebhook((await import('./helpers.js')).ownerActor, {
    vaultId: b.vaultId,
    url: `${hook.url}/rotated`,
    format: 'generic',
    events: ['push.created'],
  })
  const before = await b.storage.getWrappedKey(b.vaultId)
  const { rotateDataKey, deliverDueWebhooks } = await import('../../src/index.js')
  t.equal(await rotateDataKey(b.storage, b.keyring, b.vaultId), true)
  t.notSame(await b.storage.getWrappedKey(b.vaultId), before, 'a new data key')
  await domain.createPush(editorActor, { vaultId: b.vaultId, environment: 'development', body: { variables: { A: 'x' } } })
  const { createTestPeople } = await import('../pages/helpers.js')
  const logs: string[] = []
  const counts = await deliverDueWebhooks({
    domain: domainOf(b), // a core of its own: a data-key cache of its own, as a second process would have
    people: createTestPeople(),
    baseUrl: 'http://127.0.0.1',
    now: () => b.clock.now,
    allowPrivate: true,
    log: { info: () => {}, warn: (o) => void logs.push(JSON.stringify(o)), error: () => {} },
  })
  t.same(counts, { delivered: 1, retry: 0, failed: 0 }, logs.join('\n'))
  t.ok(verify(secret!, hook.got[0]!))
})

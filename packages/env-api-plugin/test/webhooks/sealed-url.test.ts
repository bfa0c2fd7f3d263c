import t from 'tap'
import { randomUUID } from 'node:crypto'
import { createVaultCrypto } from '../../src/vault-service.js'
import { testLogEntry } from '../../src/testing/index.js'
import { storageUnderTest } from '../storage-under-test.js'
import Fastify from 'fastify'
import envApi from '../../src/index.js'
import { build, createTestPeople, session, TTL } from '../pages/helpers.js'
import { domainOf, editorActor, receiver } from './helpers.js'

// Issue 25: a webhook's URL (a Slack URL is a credential) is stored sealed like values, shown
// masked; rows stored plain before are sealed when the delivery worker starts; adding and
// removing a webhook writes an access-log entry with no URL in it.

const PATH = '/services/T0/B0/url-canary-5e1f'

t.test('the URL is stored sealed and masked, deliveries still reach it, add and remove are logged', async (t) => {
  const hook = await receiver(t)
  const b = await build(t, { storage: await storageUnderTest(t), plugin: { allowPrivateWebhooks: true, webhookIntervalMs: 25 } })
  const owner = session(b.app, 'owner')
  await owner.get(`/v/${b.vaultId}/webhooks`)
  for (const format of ['slack', 'generic']) {
    const r = await owner.post(`/v/${b.vaultId}/webhooks/add`, { url: `${hook.url}${PATH}?token=q-canary`, format, events: 'push.created' })
    t.equal(r.statusCode, 200)
  }
  const stored = await b.storage.listWebhooks(b.vaultId)
  t.equal(stored.length, 2)
  for (const w of stored) {
    t.equal(w.url, `${hook.url}/services/…`, 'only the masked form is stored in the clear')
    t.ok(w.sealedSecret, `${w.format}: a sealed blob`)
    t.notOk(Buffer.from(w.sealedSecret!).includes('url-canary'), 'the sealed blob does not hold the URL in the clear')
  }
  const page = await owner.get(`/v/${b.vaultId}/webhooks`)
  t.notMatch(page.body, 'url-canary')
  t.notMatch(page.body, 'q-canary')

  await domainOf(b).createPush(editorActor, { vaultId: b.vaultId, environment: 'development', body: { variables: { A: 'value-canary' } } })
  const got = await hook.waitFor(2)
  t.same(
    got.map((g) => g.path),
    [`${PATH}?token=q-canary`, `${PATH}?token=q-canary`],
    'both formats deliver to the full URL',
  )

  const log = await b.storage.listAccessLog(b.vaultId, { action: 'webhook_added', limit: 10 })
  t.same(
    log.map((l) => l.detail),
    ['generic: push.created', 'slack: push.created'],
  )
  const removed = await owner.post(`/v/${b.vaultId}/webhooks/remove`, { webhook: stored[0]!.id })
  t.equal(removed.statusCode, 303)
  const [gone] = await b.storage.listAccessLog(b.vaultId, { action: 'webhook_removed', limit: 10 })
  t.equal(gone?.personId, 'p-owner')
  t.equal(gone?.detail, `${stored[0]!.format}: push.created`)
  const all = JSON.stringify(await b.storage.listAccessLog(b.vaultId, { limit: 100 }))
  for (const s of ['url-canary', 'q-canary', hook.url]) t.notMatch(all, s, 'no URL in the access log')
  t.notMatch(b.logs.join('\n'), 'url-canary', 'nor in the server log')
})

t.test('a webhook stored with its URL in the clear (before issue 25) is sealed when the worker starts', async (t) => {
  const hook = await receiver(t)
  // the previous version's server: its worker does not run here (first tick in an hour)
  const b = await build(t, { storage: await storageUnderTest(t), plugin: { allowPrivateWebhooks: true, webhookIntervalMs: 3_600_000 } })
  const crypto = createVaultCrypto(b.storage, b.keyring)
  // as the previous version stored them: the URL plain, the generic secret sealed bare
  const generic = randomUUID()
  const slack = randomUUID()
  const secret = `whsec_${'a'.repeat(43)}`
  const old = { vaultId: b.vaultId, events: ['push.created' as const], createdAt: new Date(0), createdBy: null }
  const webhook = { ...old, id: generic, url: `${hook.url}${PATH}/generic`, format: 'generic' as const }
  await b.storage.changeWebhook({ kind: 'create', webhook: { ...webhook, sealedSecret: await crypto.sealWebhookSecret(b.vaultId, generic, secret) }, most: 10 })
  await b.storage.changeWebhook({
    kind: 'create',
    webhook: { ...old, id: slack, url: `${hook.url}${PATH}/slack`, format: 'slack', sealedSecret: null },
    most: 10,
  })
  // this version starts on the same database: its worker's first run seals them
  const next = Fastify({ logger: false })
  await next.register(envApi, {
    baseUrl: 'http://127.0.0.1',
    storage: b.storage,
    keyring: b.keyring,
    people: createTestPeople(),
    now: () => b.clock.now,
    importTtlMs: TTL,
    allowPrivateWebhooks: true,
    webhookIntervalMs: 25,
  })
  await next.ready()
  t.teardown(() => next.close())
  await domainOf(b).createPush(editorActor, { vaultId: b.vaultId, environment: 'development', body: { variables: { A: 'value-canary' } } })
  const got = await hook.waitFor(2)
  t.same(got.map((g) => g.path).sort(), [`${PATH}/generic`, `${PATH}/slack`], 'both still delivered to their URLs')
  const generic1 = got.find((g) => g.path.endsWith('generic'))!
  t.ok(generic1.headers['x-envkeep-signature'], 'signed with the secret it had')
  const stored = await b.storage.listWebhooks(b.vaultId)
  t.same(
    stored.map((w) => w.url),
    [`${hook.url}/services/…`, `${hook.url}/services/…`],
    'only the masked form left in the clear',
  )
  for (const w of stored) t.notOk(Buffer.from(w.sealedSecret ?? []).includes('url-canary'))
})

// The sealing pass runs at every start of every process: with many vaults, most without a
// webhook, it reads every vault's webhooks at once instead of asking vault by vault.
t.test('the sealing pass at start reads the webhooks in one call, not one per vault', async (t) => {
  const b = await build(t, { storage: await storageUnderTest(t), plugin: { webhookIntervalMs: 3_600_000 } })
  for (let i = 0; i < 5; i++) {
    const id = randomUUID()
    const environments = [{ name: 'development', ownersOnly: false }]
    await b.storage.createVault(
      { id, name: `quiet-${i}`, ownerId: 'p-other', plan: 'self-hosted', environments, now: new Date(0) },
      testLogEntry({ vaultId: id, action: 'vault_created' }),
    )
  }
  // one webhook stored as before issue 25: its URL in the clear
  const id = randomUUID()
  const plain = 'https://hooks.slack.com/services/T0/B0/one-call-canary'
  const old = { vaultId: b.vaultId, events: ['push.created' as const], createdAt: new Date(0), createdBy: null }
  await b.storage.changeWebhook({ kind: 'create', webhook: { ...old, id, url: plain, format: 'slack', sealedSecret: null }, most: 10 })
  const asked: string[] = []
  const storage = b.storage
  const counted = new Proxy(storage, {
    get(target, key, receiver) {
      const v = Reflect.get(target, key, receiver) as unknown
      if (typeof v !== 'function') return v
      if (key !== 'listWebhooks' && key !== 'findVaults') return v.bind(target)
      return (...args: unknown[]) => {
        asked.push(`${String(key)}(${JSON.stringify(args[0] ?? null)})`)
        return v.apply(target, args)
      }
    },
  })
  const next = Fastify({ logger: false })
  await next.register(envApi, { baseUrl: 'http://127.0.0.1', storage: counted, keyring: b.keyring, people: createTestPeople(), webhookIntervalMs: 25 })
  await next.ready()
  t.teardown(() => next.close())
  const sealed = async () => (await storage.listWebhooks(b.vaultId))[0]?.url !== plain
  for (let i = 0; i < 200 && !(await sealed()); i++) await new Promise((r) => setTimeout(r, 25))
  t.ok(await sealed(), 'the webhook stored in the clear is sealed')
  t.same(asked, ['listWebhooks(null)'], 'one read of every webhook; no list of vaults, no read per vault')
})

import t from 'tap'
import { deliverDueWebhooks, MAX_ATTEMPTS, RETRY_DELAYS_MS, type WebhookWorkerDeps } from '../../src/index.js'
import { build, createTestPeople, type Built } from '../pages/helpers.js'
import { domainOf, editorActor, ownerActor, receiver } from './helpers.js'

// A failing receiver is tried again with exponential back-off, on an injected clock:
// 30 s, 2, 8 and 20 minutes, five attempts, then `failed`; a receiver that recovers gets
// the same signed body. No redirect is followed; a silent receiver times out.

/** The webhook's latest delivery, as the Webhooks page lists it. */
async function latestDeliveries(b: Built, webhookId: string) {
  return (await b.storage.listWebhooks(b.vaultId, 1)).find((w) => w.id === webhookId)?.recent ?? []
}

function workerOf(b: Built, logs: string[], timeoutMs?: number): WebhookWorkerDeps {
  const line = (level: string) => (o: object, msg: string) => void logs.push(`${level} ${msg} ${JSON.stringify(o)}`)
  return {
    domain: domainOf(b),
    people: createTestPeople(),
    baseUrl: 'https://envkeep.example.com',
    now: () => b.clock.now,
    allowPrivate: true,
    log: { info: line('info'), warn: line('warn'), error: line('error') },
    ...(timeoutMs ? { timeoutMs } : {}),
  }
}

// the plugin's own timer never fires in these tests: one hour between its runs
const QUIET = { plugin: { webhookIntervalMs: 3_600_000 } }

async function setUp(t: { teardown(fn: () => unknown): void }, path = '/hook') {
  const hook = await receiver(t, (_r, res) => res.writeHead(500).end('no'))
  const b = await build(t, QUIET)
  const domain = domainOf(b)
  const { webhook, secret } = await domain.addWebhook(ownerActor, {
    vaultId: b.vaultId,
    url: `${hook.url}${path}`,
    format: 'generic',
    events: ['push.created'],
  })
  await domain.createPush(editorActor, { vaultId: b.vaultId, environment: 'development', body: { variables: { API_KEY: 'canary-retry-value' } } })
  return { hook, b, webhook, secret: secret as string }
}

t.test('five attempts with back-off, then failed', async (t) => {
  const { hook, b, webhook, secret } = await setUp(t)
  const logs: string[] = []
  const deps = workerOf(b, logs)
  const start = b.clock.now.getTime()
  t.same(RETRY_DELAYS_MS, [30_000, 120_000, 480_000, 1_200_000])
  t.equal(MAX_ATTEMPTS, 5)
  t.same(await deliverDueWebhooks(deps), { delivered: 0, retry: 1, failed: 0 }, 'attempt 1 fails')
  let elapsed = 0
  for (const [i, delay] of RETRY_DELAYS_MS.entries()) {
    const [d] = await latestDeliveries(b, webhook.id)
    t.equal(d?.nextAttemptAt?.getTime(), start + elapsed + delay, `attempt ${i + 2} is due ${delay / 1000} s after attempt ${i + 1}`)
    t.same([d?.status, d?.attempts, d?.lastStatus, d?.lastError], ['pending', i + 1, 500, 'HTTP 500'])
    b.clock.now = new Date(start + elapsed + delay - 1)
    t.same(await deliverDueWebhooks(deps), { delivered: 0, retry: 0, failed: 0 }, 'not a millisecond early')
    elapsed += delay
    b.clock.now = new Date(start + elapsed)
    t.same(await deliverDueWebhooks(deps), i === RETRY_DELAYS_MS.length - 1 ? { delivered: 0, retry: 0, failed: 1 } : { delivered: 0, retry: 1, failed: 0 })
  }
  t.equal(elapsed, 1_830_000, 'about half an hour')
  const [d] = await latestDeliveries(b, webhook.id)
  t.same([d?.status, d?.attempts, d?.nextAttemptAt], ['failed', 5, null])
  b.clock.now = new Date(start + 86_400_000)
  t.same(await deliverDueWebhooks(deps), { delivered: 0, retry: 0, failed: 0 }, 'never tried again')
  t.equal(hook.got.length, 5, 'the receiver saw five attempts')
  t.equal(new Set(hook.got.map((r) => r.body)).size, 1, 'of the same body')
  const joined = logs.join('\n')
  t.match(joined, /webhook delivery failed/)
  for (const s of [secret, 'canary-retry-value', hook.url]) t.notMatch(joined, s, 'the log names neither the URL, the secret nor a value')
})

t.test('a receiver that recovers gets the delivery on the next attempt', async (t) => {
  const { hook, b, webhook } = await setUp(t)
  const deps = workerOf(b, [])
  await deliverDueWebhooks(deps)
  hook.respond = (_r, res) => res.writeHead(204).end()
  b.clock.now = new Date(b.clock.now.getTime() + 30_000)
  t.same(await deliverDueWebhooks(deps), { delivered: 1, retry: 0, failed: 0 })
  const [d] = await latestDeliveries(b, webhook.id)
  t.same([d?.status, d?.attempts, d?.lastStatus, d?.lastError, d?.nextAttemptAt], ['delivered', 2, 204, null, null])
})

t.test('a redirect is not followed; a silent receiver times out', async (t) => {
  const { hook, b, webhook } = await setUp(t)
  hook.respond = (r, res) => (r.path === '/hook' ? res.writeHead(302, { location: '/elsewhere' }).end() : res.writeHead(200).end())
  const deps = workerOf(b, [], 300)
  t.same(await deliverDueWebhooks(deps), { delivered: 0, retry: 1, failed: 0 })
  t.same(
    hook.got.map((r) => r.path),
    ['/hook'],
    'never /elsewhere',
  )
  let [d] = await latestDeliveries(b, webhook.id)
  t.same([d?.lastStatus, d?.lastError], [302, 'redirect not followed (HTTP 302)'])
  hook.respond = () => {} // never answers
  b.clock.now = new Date(b.clock.now.getTime() + 30_000)
  t.same(await deliverDueWebhooks(deps), { delivered: 0, retry: 1, failed: 0 })
  ;[d] = await latestDeliveries(b, webhook.id)
  t.same([d?.lastStatus, d?.lastError, d?.attempts], [null, 'no answer within 300 ms', 2])
})

t.test('two workers at once: each delivery is sent once', async (t) => {
  const hook = await receiver(t)
  const b = await build(t, QUIET)
  const domain = domainOf(b)
  await domain.addWebhook(ownerActor, { vaultId: b.vaultId, url: `${hook.url}/x`, format: 'generic', events: ['push.created'] })
  for (let i = 0; i < 7; i++) await domain.createPush(editorActor, { vaultId: b.vaultId, environment: 'development', body: { variables: { [`V${i}`]: 'x' } } })
  const deps = workerOf(b, [])
  const [a, c] = await Promise.all([deliverDueWebhooks(deps), deliverDueWebhooks(deps)])
  t.equal(a.delivered + c.delivered, 7)
  t.equal(hook.got.length, 7, 'no delivery sent twice')
})

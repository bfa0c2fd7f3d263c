import t from 'tap'
import { isPublicAddress, PRIVATE_REFUSAL, webhookUrlProblem } from '../../src/index.js'
import { sendWebhook } from '../../src/webhooks/send.js'
import { build, session } from '../pages/helpers.js'
import { domainOf, ownerActor, receiver } from './helpers.js'

// Private, loopback and link-local addresses are refused by default: when a webhook is
// added (every address its host resolves to), and again at delivery, where the checked
// address is the one connected to.

const PRIVATE = [
  'http://127.0.0.1:8080/hook',
  'http://localhost/hook',
  'http://10.1.2.3/',
  'http://172.16.0.1/',
  'http://192.168.1.10/',
  'http://169.254.169.254/latest/meta-data',
  'http://100.64.0.1/',
  'http://0.0.0.0/',
  'http://[::1]/',
  'http://[fe80::1]/',
  'http://[fd00::1]/',
  'http://[::ffff:192.168.0.1]/',
  'http://[::ffff:7f00:1]/',
  'https://2130706433/', // 127.0.0.1 as one number
  // issue 25: IPv6 forms that carry a private or loopback IPv4
  'http://[::127.0.0.1]/', // IPv4-compatible (URL writes it [::7f00:1])
  'http://[::10.0.0.1]/',
  'http://[::ffff:0:127.0.0.1]/', // SIIT
  'http://[64:ff9b::127.0.0.1]/', // NAT64
  'http://[64:ff9b:1::10.0.0.1]/', // local-use NAT64
  'http://[2002:7f00:1::1]/', // 6to4 of 127.0.0.1
  'http://[2001:0:4136:e378:8000:63bf:f5ff:fffe]/', // Teredo, client 10.0.0.1
  'http://[2607:f8b0::5efe:10.0.0.1]/', // ISATAP over a private IPv4
  'http://[2607:f8b0::200:5efe:127.0.0.1]/',
  'http://[::]/',
]

t.test('private addresses are refused by default, allowed with allowPrivate', async (t) => {
  for (const url of PRIVATE) {
    t.equal(await webhookUrlProblem(url, { allowPrivate: false }), PRIVATE_REFUSAL, url)
    t.equal(await webhookUrlProblem(url, { allowPrivate: true }), null, `${url} with allowPrivate`)
  }
  t.equal(await webhookUrlProblem('https://93.184.215.14/hook', { allowPrivate: false }), null, 'a public address')
  t.ok(isPublicAddress('2606:4700:4700::1111'))
  t.ok(isPublicAddress('::ffff:93.184.215.14'), 'a mapped public IPv4 is public')
  t.ok(isPublicAddress('2607:f8b0::5efe:93.184.215.14'), 'ISATAP over a public IPv4 is public')
  t.notOk(isPublicAddress('::93.184.215.14'), 'IPv4-compatible is deprecated: never a public host')
  t.notOk(isPublicAddress('not an address'))
})

t.test('a name is judged by every address it resolves to', async (t) => {
  const resolveHost = async (h: string) => (h === 'mixed.test' ? ['93.184.215.14', '10.0.0.7'] : h === 'public.test' ? ['93.184.215.14'] : [])
  t.equal(await webhookUrlProblem('https://mixed.test/x', { allowPrivate: false, resolveHost }), PRIVATE_REFUSAL)
  t.equal(await webhookUrlProblem('https://public.test/x', { allowPrivate: false, resolveHost }), null)
  t.match(await webhookUrlProblem('https://nowhere.test/x', { allowPrivate: false, resolveHost }), /does not resolve/)
})

t.test('URL shapes refused, without repeating the URL', async (t) => {
  for (const [url, why] of [
    ['ftp://example.com/x', /https:\/\/ or http:\/\//],
    ['https://user:pw-canary@example.com/x', /user name or password/],
    ['https://example.com/x#frag', /fragment/],
    ['not a url', /absolute URL/],
    ['', /needs a URL/],
    [`https://example.com/${'a'.repeat(2001)}`, /at most 2000/],
  ] as const) {
    const p = await webhookUrlProblem(url, { allowPrivate: true })
    t.match(p, why, url.slice(0, 40))
    t.notMatch(p ?? '', 'canary')
  }
})

t.test('at delivery: a name that now resolves to a private address is refused, and nothing is sent', async (t) => {
  const hook = await receiver(t)
  const port = new URL(hook.url).port
  const rebound = await sendWebhook({
    url: `http://rebind.test:${port}/hook`,
    body: '{}',
    headers: {},
    timeoutMs: 2000,
    allowPrivate: false,
    resolveHost: async () => ['127.0.0.1'],
  })
  t.same(rebound, { ok: false, status: null, error: 'refused: the host resolves to a private, loopback or link-local address' })
  const literal = await sendWebhook({ url: `${hook.url}/hook`, body: '{}', headers: {}, timeoutMs: 2000, allowPrivate: false })
  t.equal(literal.ok, false)
  // issue 25: a name resolving to an IPv6 form of a loopback IPv4, and the literal form
  for (const address of ['::127.0.0.1', '64:ff9b::7f00:1', '::ffff:0:7f00:1']) {
    const hidden = await sendWebhook({
      url: `http://hidden.test:${port}/hook`,
      body: '{}',
      headers: {},
      timeoutMs: 2000,
      allowPrivate: false,
      resolveHost: async () => [address],
    })
    t.equal(hidden.ok, false, address)
  }
  t.equal((await sendWebhook({ url: `http://[::127.0.0.1]:${port}/hook`, body: '{}', headers: {}, timeoutMs: 2000, allowPrivate: false })).ok, false)
  t.equal(hook.got.length, 0, 'the receiver saw nothing')
  // the same request with private addresses allowed does arrive (so the refusal above is the check's)
  const direct = await sendWebhook({ url: `${hook.url}/hook`, body: '{}', headers: {}, timeoutMs: 2000, allowPrivate: true })
  t.same(direct, { ok: true, status: 200 })
  t.equal(hook.got.length, 1)
})

t.test('by default the page refuses a private URL and stores nothing', async (t) => {
  const b = await build(t)
  const owner = session(b.app, 'owner')
  await owner.get(`/v/${b.vaultId}/webhooks`)
  const res = await owner.post(`/v/${b.vaultId}/webhooks/add`, { url: 'http://169.254.169.254/latest/meta-data', format: 'generic', events: 'push.created' })
  t.equal(res.statusCode, 400)
  t.match(res.body, 'webhooks call public addresses only')
  t.notMatch(res.body, 'whsec_')
  t.same(await b.storage.listWebhooks(b.vaultId), [])
  await t.rejects(
    domainOf(b, { allowPrivateWebhooks: false }).addWebhook(ownerActor, {
      vaultId: b.vaultId,
      url: 'http://localhost:9/x',
      format: 'slack',
      events: ['push.created'],
    }),
    { name: 'DomainFailure', message: PRIVATE_REFUSAL },
  )
})

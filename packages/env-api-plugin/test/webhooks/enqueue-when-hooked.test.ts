import t from 'tap'
import { createEnvkeepCore, type Storage } from '../../src/index.js'

type EnqueueInput = Parameters<Storage['enqueueDeliveries']>[0]
import { build, createTestPeople, TTL } from '../pages/helpers.js'
import { editorActor, ownerActor } from './helpers.js'

// A push in a vault without a webhook has no deliveries to enqueue: createImport and
// decideImport say whether the vault had one (read under the vault's lock, where a webhook is
// added), and the domain asks for the enqueue only then. A webhook added later gets the next
// push's events.

t.test('a push asks for its deliveries only in a vault with a webhook', async (t) => {
  const b = await build(t)
  const asked: (string | undefined)[] = []
  const storage = new Proxy(b.storage, {
    get(target, key) {
      if (key === 'enqueueDeliveries')
        return (input: EnqueueInput) => {
          asked.push(input.pushId)
          return target.enqueueDeliveries(input)
        }
      const v = Reflect.get(target, key)
      return typeof v === 'function' ? v.bind(target) : v
    },
  }) as Storage
  const { domain } = createEnvkeepCore({
    storage,
    keyring: b.keyring,
    now: () => b.clock.now,
    importTtlMs: TTL,
    people: createTestPeople(),
    allowPrivateWebhooks: true,
  })
  const push = () => domain.createPush(editorActor, { vaultId: b.vaultId, environment: 'development', body: { variables: { API_KEY: 'v' } } })

  const reject = (importId: string) => domain.decidePush(ownerActor, { vaultId: b.vaultId, importId, decision: 'rejected' })

  const first = await push()
  await reject(first.id)
  t.same(asked, [], 'no webhook: nothing asked of storage, made or decided')
  const pending = await push()
  await domain.addWebhook(ownerActor, { vaultId: b.vaultId, url: 'https://hooks.example.com/envkeep', format: 'generic', events: ['push.created'] })
  const second = await push()
  t.same(asked, [second.id], 'a webhook: its deliveries enqueued right after the push')
  await reject(pending.id)
  t.same(asked, [second.id, pending.id], 'and right after a decision')
})

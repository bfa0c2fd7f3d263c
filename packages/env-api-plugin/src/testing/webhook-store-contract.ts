import assert from 'node:assert/strict'
import { resealForTest, storeFirstKey } from './keys.js'
import { randomBytes, randomUUID } from 'node:crypto'
import type { VaultStore } from '../adapters/vault-store.js'
import type { NewWebhook, WebhookEvent, WebhookStore } from '../adapters/webhook-store.js'
import { StorageError } from '../errors.js'
import { TEST_NO_LIMIT, testLogEntry } from './log-entry.js'
import type { ContractRunner } from './vault-store-contract.js'

/**
 * The contract every webhook store must meet (adapters/webhook-store.ts),
 * as plain async cases that throw. The store is the backend's whole
 * storage (deliveries are made from its pushes).
 */
export interface WebhookStoreFixture {
  readonly store: VaultStore & WebhookStore
  close(): Promise<void>
}

export type MakeWebhookStore = () => Promise<WebhookStoreFixture>

export function runWebhookStoreContract(t: ContractRunner, make: MakeWebhookStore): void {
  for (const c of webhookStoreContract) {
    t.test(c.name, async (t) => {
      await c.run(make)
      t.pass('the case holds')
    })
  }
}

const T0 = new Date('2026-11-21T10:00:00.000Z')
const OWNER = 'person-owner'
const at = (ms: number): Date => new Date(T0.getTime() + ms)
const ALL: readonly WebhookEvent[] = ['push.created', 'push.decided', 'push.expired']

async function withStore(make: MakeWebhookStore, fn: (store: VaultStore & WebhookStore) => Promise<void>): Promise<void> {
  const f = await make()
  try {
    await fn(f.store)
  } finally {
    await f.close()
  }
}

async function newVault(store: VaultStore): Promise<string> {
  const id = randomUUID()
  await store.createVault(
    { id, name: `vault-${id.slice(0, 8)}`, ownerId: OWNER, plan: 'self-hosted', environments: [{ name: 'development', ownersOnly: false }], now: T0 },
    testLogEntry({ vaultId: id, action: 'vault_created', at: T0 }),
  )
  return id
}

async function newPush(store: VaultStore, vaultId: string, createdAt: Date, ttlMs = 3_600_000): Promise<string> {
  const id = randomUUID()
  const r = await store.createImport(
    {
      id,
      vaultId,
      environment: 'development',
      senderId: OWNER,
      signInId: null,
      values: [{ name: 'API_KEY', sealed: new Uint8Array(randomBytes(40)) }],
      refused: [],
      createdAt,
      expiresAt: new Date(createdAt.getTime() + ttlMs),
      limit: TEST_NO_LIMIT,
    },
    testLogEntry({ vaultId, action: 'push_created', at: createdAt, personId: OWNER, environment: 'development', names: ['API_KEY'] }),
  )
  assert.ok(r.ok)
  return id
}

function webhook(vaultId: string, o: Partial<NewWebhook> = {}): NewWebhook {
  return {
    id: randomUUID(),
    vaultId,
    url: 'https://hooks.example.com/envkeep',
    format: 'generic',
    events: ALL,
    sealedSecret: new Uint8Array(randomBytes(60)),
    createdAt: T0,
    createdBy: OWNER,
    ...o,
  }
}

async function rejects23(p: Promise<unknown>, sqlstate: string): Promise<void> {
  await assert.rejects(p, (err: unknown) => err instanceof StorageError && err.sqlstate === sqlstate)
}

export const webhookStoreContract: readonly { name: string; run(make: MakeWebhookStore): Promise<void> }[] = [
  {
    name: 'createWebhook and listWebhooks: a vault’s webhooks, oldest first, events in their order; 23503 for no vault, 23505 for a known id',
    async run(make) {
      await withStore(make, async (store) => {
        const v = await newVault(store)
        const other = await newVault(store)
        const a = await store.createWebhook(webhook(v, { events: ['push.expired', 'push.created'] }))
        assert.deepEqual(a.events, ['push.created', 'push.expired'])
        const b = await store.createWebhook(
          webhook(v, { format: 'slack', sealedSecret: null, createdAt: at(1000), url: 'https://hooks.slack.com/services/T/B/x' }),
        )
        await store.createWebhook(webhook(other))
        const list = await store.listWebhooks(v)
        assert.deepEqual(
          list.map((w) => [w.id, w.format, w.url, w.createdAt.getTime(), w.createdBy]),
          [
            [a.id, 'generic', 'https://hooks.example.com/envkeep', T0.getTime(), OWNER],
            [b.id, 'slack', 'https://hooks.slack.com/services/T/B/x', at(1000).getTime(), OWNER],
          ],
        )
        // the sealed secret comes back as stored (bytes, sealed by the domain), null when none
        assert.deepEqual(
          list.map((w) => (w.sealedSecret ? Buffer.from(w.sealedSecret).length : w.sealedSecret)),
          [60, null],
        )
        assert.deepEqual(await store.listWebhooks(randomUUID()), [])
        await rejects23(store.createWebhook(webhook(randomUUID())), '23503')
        await rejects23(store.createWebhook(webhook(v, { id: a.id })), '23505')
      })
    },
  },
  {
    name: 'sealWebhookUrl: compare and set of url and sealed secret, for the vault’s webhook only',
    async run(make) {
      await withStore(make, async (store) => {
        const v = await newVault(store)
        const w = await store.createWebhook(webhook(v, { url: 'https://hooks.example.com/plain-canary' }))
        const sealed = new Uint8Array(randomBytes(80))
        const input = { vaultId: v, webhookId: w.id, ifUrl: 'https://hooks.example.com/plain-canary', url: 'https://hooks.example.com/…', sealedSecret: sealed }
        assert.equal(await store.sealWebhookUrl({ ...input, vaultId: randomUUID() }), false, 'another vault')
        assert.equal(await store.sealWebhookUrl({ ...input, ifUrl: 'https://other.example.com/' }), false, 'a url that changed')
        assert.equal(await store.sealWebhookUrl({ ...input, webhookId: randomUUID() }), false, 'no such webhook')
        assert.equal(await store.sealWebhookUrl(input), true)
        assert.equal(await store.sealWebhookUrl(input), false, 'once')
        const [got] = await store.listWebhooks(v)
        assert.equal(got?.url, 'https://hooks.example.com/…')
        assert.deepEqual(Buffer.from(got?.sealedSecret ?? []), Buffer.from(sealed))
      })
    },
  },
  {
    name: 'enqueueDeliveries: one delivery per (webhook, push, event) wanted, from the webhook’s creation on; again → none',
    async run(make) {
      await withStore(make, async (store) => {
        const v = await newVault(store)
        const before = await newPush(store, v, at(500))
        const all = await store.createWebhook(webhook(v, { createdAt: at(1000) }))
        const decidedOnly = await store.createWebhook(webhook(v, { createdAt: at(1000), events: ['push.decided'] }))
        const p = await newPush(store, v, at(2000))
        const n = await store.enqueueDeliveries({ now: at(2001), since: at(0) })
        assert.equal(n, 1, 'the push made after the webhooks, for the webhook that wants push.created')
        assert.equal(await store.enqueueDeliveries({ now: at(2002), since: at(0) }), 0, 'never twice')
        const [d] = await store.listDeliveries(v, all.id, 10)
        assert.ok(d)
        assert.deepEqual(
          [d.pushId, d.event, d.status, d.attempts, d.occurredAt.getTime(), d.nextAttemptAt?.getTime()],
          [p, 'push.created', 'pending', 0, at(2000).getTime(), at(2001).getTime()],
        )
        assert.equal(d.pushId === before, false)
        assert.deepEqual(await store.listDeliveries(v, decidedOnly.id, 10), [])

        const r = await store.decideImport(
          { importId: p, decision: 'rejected', by: OWNER, now: at(3000) },
          testLogEntry({ vaultId: v, action: 'push_rejected', at: at(3000) }),
        )
        assert.ok(r.ok)
        assert.equal(await store.enqueueDeliveries({ now: at(3001), since: at(2500), pushId: p }), 2, 'push.decided for both webhooks')
        assert.deepEqual(
          (await store.listDeliveries(v, decidedOnly.id, 10)).map((x) => [x.event, x.occurredAt.getTime()]),
          [['push.decided', at(3000).getTime()]],
        )
        assert.deepEqual(
          (await store.listDeliveries(v, all.id, 10)).map((x) => x.event),
          ['push.decided', 'push.created'],
          'newest event first',
        )
      })
    },
  },
  {
    name: 'enqueueDeliveries: `since` and `pushId` limit it; an expired push gives push.expired',
    async run(make) {
      await withStore(make, async (store) => {
        const v = await newVault(store)
        const w = await store.createWebhook(webhook(v))
        const p1 = await newPush(store, v, at(1000), 1000)
        const p2 = await newPush(store, v, at(1500))
        assert.equal(await store.enqueueDeliveries({ now: at(1600), since: at(1200) }), 1, 'only p2 was created since')
        assert.equal(await store.enqueueDeliveries({ now: at(1600), since: at(0), pushId: p1 }), 1, 'p1 alone')
        assert.equal(await store.expireImports(at(5000)), 1)
        assert.equal(await store.enqueueDeliveries({ now: at(5001), since: at(1000) }), 1)
        const list = await store.listDeliveries(v, w.id, 10)
        assert.deepEqual(
          list.map((d) => [d.pushId, d.event]),
          [
            [p1, 'push.expired'],
            [p2, 'push.created'],
            [p1, 'push.created'],
          ],
        )
        assert.equal(list[0]?.occurredAt.getTime(), at(2000).getTime(), 'expired when its time was up')
      })
    },
  },
  {
    name: 'claimDeliveries: due ones only, each to one claimer, with the webhook and its sealed secret; a claim ends after its lease',
    async run(make) {
      await withStore(make, async (store) => {
        const v = await newVault(store)
        const secret = new Uint8Array(randomBytes(60))
        const w = await store.createWebhook(webhook(v, { sealedSecret: secret }))
        for (let i = 0; i < 6; i++) await newPush(store, v, at(100 + i))
        assert.equal(await store.enqueueDeliveries({ now: at(1000), since: at(0) }), 6)
        assert.deepEqual(await store.claimDeliveries({ now: at(999), leaseMs: 60_000, limit: 10, token: 'early' }), [], 'not due yet')
        const [a, b] = await Promise.all([
          store.claimDeliveries({ now: at(1000), leaseMs: 60_000, limit: 4, token: 'a' }),
          store.claimDeliveries({ now: at(1000), leaseMs: 60_000, limit: 4, token: 'b' }),
        ])
        const ids = [...a, ...b].map((d) => d.id)
        assert.equal(ids.length, 6)
        assert.equal(new Set(ids).size, 6, 'no delivery claimed twice')
        const one = a[0] ?? b[0]
        assert.ok(one)
        assert.equal(one.webhook.id, w.id)
        assert.equal(one.webhook.url, w.url)
        assert.ok(one.sealedSecret && Buffer.from(one.sealedSecret).equals(Buffer.from(secret)))
        assert.deepEqual(await store.claimDeliveries({ now: at(30_000), leaseMs: 60_000, limit: 10, token: 'c' }), [], 'all held')
        const again = await store.claimDeliveries({ now: at(61_000), leaseMs: 60_000, limit: 10, token: 'd' })
        assert.equal(again.length, 6, 'claims that ended are taken again')
        assert.equal(await store.finishAttempt(attempt(one.id, 'a', 'delivered', at(61_500))), false, 'the first claim is lost')
        assert.equal(await store.finishAttempt(attempt(one.id, 'd', 'delivered', at(61_500))), true)
      })
    },
  },
  {
    name: 'finishAttempt: retry keeps it pending until its time, delivered and failed end it; listDeliveries shows the last attempt',
    async run(make) {
      await withStore(make, async (store) => {
        const v = await newVault(store)
        const w = await store.createWebhook(webhook(v))
        await newPush(store, v, at(100))
        await store.enqueueDeliveries({ now: at(200), since: at(0) })
        const [d] = await store.claimDeliveries({ now: at(200), leaseMs: 60_000, limit: 1, token: 't1' })
        assert.ok(d)
        assert.equal(
          await store.finishAttempt({ ...attempt(d.id, 't1', 'retry', at(300)), httpStatus: 503, error: 'HTTP 503', nextAttemptAt: at(30_300) }),
          true,
        )
        const [after] = await store.listDeliveries(v, w.id, 5)
        assert.deepEqual(
          [after?.status, after?.attempts, after?.lastStatus, after?.lastError, after?.lastAttemptAt?.getTime(), after?.nextAttemptAt?.getTime()],
          ['pending', 1, 503, 'HTTP 503', at(300).getTime(), at(30_300).getTime()],
        )
        assert.deepEqual(await store.claimDeliveries({ now: at(30_299), leaseMs: 60_000, limit: 1, token: 'x' }), [], 'released, but not due yet')
        const [d2] = await store.claimDeliveries({ now: at(30_300), leaseMs: 60_000, limit: 1, token: 't2' })
        assert.equal(d2?.attempts, 1)
        assert.equal(await store.finishAttempt({ ...attempt(d.id, 't2', 'failed', at(30_400)), error: 'timed out after 5 s' }), true)
        const [failed] = await store.listDeliveries(v, w.id, 5)
        assert.deepEqual(
          [failed?.status, failed?.attempts, failed?.nextAttemptAt, failed?.lastStatus, failed?.lastError],
          ['failed', 2, null, null, 'timed out after 5 s'],
        )
        assert.deepEqual(await store.claimDeliveries({ now: at(999_999), leaseMs: 60_000, limit: 5, token: 'y' }), [], 'a failed delivery is never claimed')
        assert.equal(await store.finishAttempt(attempt('999999', 'y', 'delivered', at(1))), false, 'unknown delivery')
      })
    },
  },
  {
    name: 'deleteWebhook takes its deliveries; pruneDeliveries removes finished ones older than the cut',
    async run(make) {
      await withStore(make, async (store) => {
        const v = await newVault(store)
        const keep = await store.createWebhook(webhook(v))
        const gone = await store.createWebhook(webhook(v))
        await newPush(store, v, at(100))
        await newPush(store, v, at(5000))
        assert.equal(await store.enqueueDeliveries({ now: at(6000), since: at(0) }), 4)
        assert.equal(await store.deleteWebhook(randomUUID(), gone.id), false, 'another vault’s id')
        assert.equal(await store.deleteWebhook(v, gone.id), true)
        assert.equal(await store.deleteWebhook(v, gone.id), false)
        assert.deepEqual(await store.listDeliveries(v, gone.id, 10), [])
        assert.deepEqual(
          (await store.listWebhooks(v)).map((w) => w.id),
          [keep.id],
        )
        const claimed = await store.claimDeliveries({ now: at(6000), leaseMs: 60_000, limit: 10, token: 't' })
        assert.equal(claimed.length, 2, 'the deleted webhook’s deliveries are not claimed')
        for (const d of claimed) await store.finishAttempt(attempt(d.id, 't', 'delivered', at(6100)))
        assert.equal(await store.pruneDeliveries(at(1000)), 1, 'only the finished delivery of the old event')
        assert.deepEqual(
          (await store.listDeliveries(v, keep.id, 10)).map((d) => d.occurredAt.getTime()),
          [at(5000).getTime()],
        )
      })
    },
  },
  {
    name: 'resealVault hands over every signing secret of the vault and writes the resealed bytes back',
    async run(make) {
      await withStore(make, async (store) => {
        const v = await newVault(store)
        const other = await newVault(store)
        await storeFirstKey(store, v, new Uint8Array(randomBytes(60)))
        const signed = await store.createWebhook(webhook(v))
        await store.createWebhook(webhook(v, { format: 'slack', sealedSecret: null }))
        await store.createWebhook(webhook(other))
        const fresh = new Uint8Array(randomBytes(60))
        let seen: string[] = []
        assert.equal(
          await resealForTest(store, v, async (cur) => {
            seen = (cur.webhooks ?? []).map((w) => w.webhookId)
            return { ...cur, wrappedKey: new Uint8Array(randomBytes(60)), webhooks: (cur.webhooks ?? []).map((w) => ({ ...w, sealed: fresh })) }
          }),
          true,
        )
        assert.deepEqual(seen, [signed.id], 'the signed webhook of this vault only')
        await store.enqueueDeliveries({ now: at(1), since: at(0) })
        await newPush(store, v, at(10))
        await store.enqueueDeliveries({ now: at(20), since: at(0) })
        const [d] = await store.claimDeliveries({ now: at(20), leaseMs: 1000, limit: 5, token: 't' }).then((l) => l.filter((x) => x.webhook.id === signed.id))
        assert.ok(d?.sealedSecret && Buffer.from(d.sealedSecret).equals(Buffer.from(fresh)), 'the resealed secret is stored')
      })
    },
  },
]

function attempt(deliveryId: string, claimToken: string, outcome: 'delivered' | 'retry' | 'failed', when: Date) {
  return { deliveryId, claimToken, at: when, httpStatus: outcome === 'delivered' ? 204 : null, error: null, outcome, nextAttemptAt: null }
}

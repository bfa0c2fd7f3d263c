import type { ImportStore } from '../adapters/import-store.js'
import assert from 'node:assert/strict'
import { resealForTest, storeFirstKey } from './keys.js'
import { randomBytes, randomUUID } from 'node:crypto'
import type { ChangeResult } from '../adapters/results.js'
import type { Storage } from '../adapters/storage.js'
import type { VaultStore } from '../adapters/vault-store.js'
import type { ClaimedDelivery, DeliveryRecord, NewWebhook, WebhookEvent, WebhookRecord, WebhookStore } from '../adapters/webhook-store.js'
import { StorageError } from '../errors.js'
import { TEST_NO_LIMIT, testLogEntry } from './log-entry.js'
import type { ContractRunner } from './vault-store-contract.js'

/**
 * The contract every webhook store must meet (adapters/webhook-store.ts),
 * as plain async cases that throw. The store is the backend's whole
 * storage (deliveries are made from its pushes).
 */
export interface WebhookStoreFixture {
  readonly store: Store
  close(): Promise<void>
}

/** The backend's storage as these cases use it: vaults and pushes, webhooks, and the housekeeping purge. */
type Store = VaultStore & ImportStore & WebhookStore & Pick<Storage, 'purgeExpired'>

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

async function withStore(make: MakeWebhookStore, fn: (store: Store) => Promise<void>): Promise<void> {
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

async function newPush(store: VaultStore & ImportStore, vaultId: string, createdAt: Date, ttlMs = 3_600_000): Promise<string> {
  return (await madePush(store, vaultId, createdAt, ttlMs)).id
}

/** A push made, with createImport's word on whether its vault had a webhook. */
async function madePush(store: VaultStore & ImportStore, vaultId: string, createdAt: Date, ttlMs = 3_600_000): Promise<{ id: string; webhooks: boolean }> {
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
  return { id, webhooks: r.webhooks }
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

/** A change's answer in one word: 'ok', or why not. */
const why = (r: ChangeResult<string, unknown>): string => (r.ok ? 'ok' : r.reason)

/** Adds a webhook (at most 10 a vault), which must succeed. */
async function add(store: Store, w: NewWebhook): Promise<WebhookRecord> {
  const r = await store.changeWebhook({ kind: 'create', webhook: w, most: 10 })
  assert.ok(r.ok, `added (${r.ok || r.reason})`)
  return r.value
}

/** Claims deliveries (never refused): the claimed ones. */
async function claimed(store: Store, input: Parameters<Store['claimDeliveries']>[0]): Promise<readonly ClaimedDelivery[]> {
  const r = await store.claimDeliveries(input)
  assert.ok(r.ok)
  return r.value
}

/** A webhook's latest deliveries, as listWebhooks gives them. */
async function deliveriesOf(store: Store, vaultId: string, webhookId: string, limit: number): Promise<readonly DeliveryRecord[]> {
  return (await store.listWebhooks(vaultId, limit)).find((w) => w.id === webhookId)?.recent ?? []
}

async function rejects23(p: Promise<unknown>, sqlstate: string): Promise<void> {
  await assert.rejects(p, (err: unknown) => err instanceof StorageError && err.sqlstate === sqlstate)
}

export const webhookStoreContract: readonly { name: string; run(make: MakeWebhookStore): Promise<void> }[] = [
  {
    name: 'changeWebhook (create) and listWebhooks: a vault’s webhooks (or with null every vault’s), oldest first, events in their order; not_found for no vault, too_many past `most`, 23505 for a known id',
    async run(make) {
      await withStore(make, async (store) => {
        const v = await newVault(store)
        const other = await newVault(store)
        const a = await add(store, webhook(v, { events: ['push.expired', 'push.created'] }))
        assert.deepEqual(a.events, ['push.created', 'push.expired'])
        const b = await add(store, webhook(v, { format: 'slack', sealedSecret: null, createdAt: at(1000), url: 'https://hooks.slack.com/services/T/B/x' }))
        const c = await add(store, webhook(other))
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
        // null: every vault's (the sealing pass at start), oldest first, each with its vault
        const every = (await store.listWebhooks(null)).filter((w) => [a.id, b.id, c.id].includes(w.id))
        assert.deepEqual(every.map((w) => w.id).sort(), [a.id, b.id, c.id].sort())
        assert.equal(every.at(-1)?.id, b.id, 'oldest first')
        assert.equal(every.find((w) => w.id === c.id)?.vaultId, other)
        assert.ok(
          every.every((w) => w.sealedSecret !== undefined),
          'with their sealed secrets, as stored',
        )
        assert.deepEqual(await store.changeWebhook({ kind: 'create', webhook: webhook(randomUUID()), most: 10 }), { ok: false, reason: 'not_found' })
        await rejects23(store.changeWebhook({ kind: 'create', webhook: webhook(v, { id: a.id }), most: 10 }), '23505')
        // at most `most` a vault, counted in the change; refused with nothing written or logged
        const logBefore = (await store.listAccessLog(v, { limit: 100 })).length
        const third = webhook(v)
        const added = testLogEntry({ vaultId: v, action: 'webhook_added', at: T0 })
        assert.deepEqual(await store.changeWebhook({ kind: 'create', webhook: third, most: 2 }, added), { ok: false, reason: 'too_many' })
        assert.equal((await store.listWebhooks(v)).length, 2)
        assert.equal((await store.listAccessLog(v, { limit: 100 })).length, logBefore)
        assert.equal(why(await store.changeWebhook({ kind: 'create', webhook: third, most: 3 }, added)), 'ok')
        assert.equal((await store.listAccessLog(v, { limit: 100 }))[0]?.action, 'webhook_added', 'logged in the same change')
      })
    },
  },
  {
    name: 'createImport and decideImport say whether the vault has a webhook (nothing to enqueue without one); a webhook of another vault does not count',
    async run(make) {
      await withStore(make, async (store) => {
        const v = await newVault(store)
        const other = await newVault(store)
        await add(store, webhook(other))
        const quiet = await madePush(store, v, T0)
        assert.equal(quiet.webhooks, false, 'none in this vault')
        const decide = async (importId: string, now: Date) => {
          const r = await store.decideImport({ importId, decision: 'rejected', by: OWNER, now }, testLogEntry({ vaultId: v, action: 'push_rejected', at: now }))
          assert.ok(r.ok)
          return r.webhooks
        }
        const pending = await madePush(store, v, at(1))
        assert.equal(await decide(quiet.id, at(2)), false, 'decided: none in this vault')
        await add(store, webhook(v, { events: ['push.expired'] }))
        assert.equal((await madePush(store, v, at(3))).webhooks, true, 'one now (whatever its events)')
        assert.equal(await decide(pending.id, at(4)), true, 'decided: one now')
        assert.equal((await madePush(store, other, at(5))).webhooks, true)
      })
    },
  },
  {
    name: 'changeWebhook (seal): compare and set of url and sealed secret, for the vault’s webhook only',
    async run(make) {
      await withStore(make, async (store) => {
        const v = await newVault(store)
        const w = await add(store, webhook(v, { url: 'https://hooks.example.com/plain-canary' }))
        const sealed = new Uint8Array(randomBytes(80))
        const input = { vaultId: v, webhookId: w.id, ifUrl: 'https://hooks.example.com/plain-canary', url: 'https://hooks.example.com/…', sealedSecret: sealed }
        assert.equal(why(await store.changeWebhook({ kind: 'seal', ...input, vaultId: randomUUID() })), 'not_found', 'another vault')
        assert.equal(why(await store.changeWebhook({ kind: 'seal', ...input, ifUrl: 'https://other.example.com/' })), 'not_found', 'a url that changed')
        assert.equal(why(await store.changeWebhook({ kind: 'seal', ...input, webhookId: randomUUID() })), 'not_found', 'no such webhook')
        assert.equal(why(await store.changeWebhook({ kind: 'seal', ...input })), 'ok')
        assert.equal(why(await store.changeWebhook({ kind: 'seal', ...input })), 'not_found', 'once')
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
        const all = await add(store, webhook(v, { createdAt: at(1000) }))
        const decidedOnly = await add(store, webhook(v, { createdAt: at(1000), events: ['push.decided'] }))
        const p = await newPush(store, v, at(2000))
        const n = await store.enqueueDeliveries({ now: at(2001), since: at(0) })
        assert.deepEqual(n, { ok: true, value: 1 }, 'the push made after the webhooks, for the webhook that wants push.created')
        assert.deepEqual(await store.enqueueDeliveries({ now: at(2002), since: at(0) }), { ok: true, value: 0 }, 'never twice')
        const [d] = await deliveriesOf(store, v, all.id, 10)
        assert.ok(d)
        assert.deepEqual(
          [d.pushId, d.event, d.status, d.attempts, d.occurredAt.getTime(), d.nextAttemptAt?.getTime()],
          [p, 'push.created', 'pending', 0, at(2000).getTime(), at(2001).getTime()],
        )
        assert.equal(d.pushId === before, false)
        assert.deepEqual(await deliveriesOf(store, v, decidedOnly.id, 10), [])

        const r = await store.decideImport(
          { importId: p, decision: 'rejected', by: OWNER, now: at(3000) },
          testLogEntry({ vaultId: v, action: 'push_rejected', at: at(3000) }),
        )
        assert.ok(r.ok)
        assert.deepEqual(await store.enqueueDeliveries({ now: at(3001), since: at(2500), pushId: p }), { ok: true, value: 2 }, 'push.decided for both webhooks')
        assert.deepEqual(
          (await deliveriesOf(store, v, decidedOnly.id, 10)).map((x) => [x.event, x.occurredAt.getTime()]),
          [['push.decided', at(3000).getTime()]],
        )
        assert.deepEqual(
          (await deliveriesOf(store, v, all.id, 10)).map((x) => x.event),
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
        const w = await add(store, webhook(v))
        const p1 = await newPush(store, v, at(1000), 1000)
        const p2 = await newPush(store, v, at(1500))
        assert.deepEqual(await store.enqueueDeliveries({ now: at(1600), since: at(1200) }), { ok: true, value: 1 }, 'only p2 was created since')
        assert.deepEqual(await store.enqueueDeliveries({ now: at(1600), since: at(0), pushId: p1 }), { ok: true, value: 1 }, 'p1 alone')
        assert.deepEqual(await store.expireImports(at(5000)), { ok: true, value: 1 })
        assert.deepEqual(await store.enqueueDeliveries({ now: at(5001), since: at(1000) }), { ok: true, value: 1 })
        const list = await deliveriesOf(store, v, w.id, 10)
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
        const w = await add(store, webhook(v, { sealedSecret: secret }))
        for (let i = 0; i < 6; i++) await newPush(store, v, at(100 + i))
        assert.deepEqual(await store.enqueueDeliveries({ now: at(1000), since: at(0) }), { ok: true, value: 6 })
        assert.deepEqual(await store.claimDeliveries({ now: at(999), leaseMs: 60_000, limit: 10, token: 'early' }), { ok: true, value: [] }, 'not due yet')
        const [a, b] = await Promise.all([
          claimed(store, { now: at(1000), leaseMs: 60_000, limit: 4, token: 'a' }),
          claimed(store, { now: at(1000), leaseMs: 60_000, limit: 4, token: 'b' }),
        ])
        const ids = [...a, ...b].map((d) => d.id)
        assert.equal(ids.length, 6)
        assert.equal(new Set(ids).size, 6, 'no delivery claimed twice')
        const one = a[0] ?? b[0]
        assert.ok(one)
        assert.equal(one.webhook.id, w.id)
        assert.equal(one.webhook.url, w.url)
        assert.ok(one.sealedSecret && Buffer.from(one.sealedSecret).equals(Buffer.from(secret)))
        assert.deepEqual(await store.claimDeliveries({ now: at(30_000), leaseMs: 60_000, limit: 10, token: 'c' }), { ok: true, value: [] }, 'all held')
        const again = await claimed(store, { now: at(61_000), leaseMs: 60_000, limit: 10, token: 'd' })
        assert.equal(again.length, 6, 'claims that ended are taken again')
        assert.equal(why(await store.finishAttempt(attempt(one.id, 'a', 'delivered', at(61_500)))), 'not_found', 'the first claim is lost')
        assert.equal(why(await store.finishAttempt(attempt(one.id, 'd', 'delivered', at(61_500)))), 'ok')
      })
    },
  },
  {
    name: 'finishAttempt: retry keeps it pending until its time, delivered and failed end it; listWebhooks shows the last attempt',
    async run(make) {
      await withStore(make, async (store) => {
        const v = await newVault(store)
        const w = await add(store, webhook(v))
        await newPush(store, v, at(100))
        await store.enqueueDeliveries({ now: at(200), since: at(0) })
        const [d] = await claimed(store, { now: at(200), leaseMs: 60_000, limit: 1, token: 't1' })
        assert.ok(d)
        assert.equal(
          why(await store.finishAttempt({ ...attempt(d.id, 't1', 'retry', at(300)), httpStatus: 503, error: 'HTTP 503', nextAttemptAt: at(30_300) })),
          'ok',
        )
        const [after] = await deliveriesOf(store, v, w.id, 5)
        assert.deepEqual(
          [after?.status, after?.attempts, after?.lastStatus, after?.lastError, after?.lastAttemptAt?.getTime(), after?.nextAttemptAt?.getTime()],
          ['pending', 1, 503, 'HTTP 503', at(300).getTime(), at(30_300).getTime()],
        )
        assert.deepEqual(
          await store.claimDeliveries({ now: at(30_299), leaseMs: 60_000, limit: 1, token: 'x' }),
          { ok: true, value: [] },
          'released, but not due yet',
        )
        const [d2] = await claimed(store, { now: at(30_300), leaseMs: 60_000, limit: 1, token: 't2' })
        assert.equal(d2?.attempts, 1)
        assert.equal(why(await store.finishAttempt({ ...attempt(d.id, 't2', 'failed', at(30_400)), error: 'timed out after 5 s' })), 'ok')
        const [failed] = await deliveriesOf(store, v, w.id, 5)
        assert.deepEqual(
          [failed?.status, failed?.attempts, failed?.nextAttemptAt, failed?.lastStatus, failed?.lastError],
          ['failed', 2, null, null, 'timed out after 5 s'],
        )
        assert.deepEqual(
          await store.claimDeliveries({ now: at(999_999), leaseMs: 60_000, limit: 5, token: 'y' }),
          { ok: true, value: [] },
          'a failed delivery is never claimed',
        )
        assert.equal(why(await store.finishAttempt(attempt('999999', 'y', 'delivered', at(1)))), 'not_found', 'unknown delivery')
      })
    },
  },
  {
    name: 'changeWebhook (delete) takes its deliveries; purgeExpired removes finished ones older than the cut',
    async run(make) {
      await withStore(make, async (store) => {
        const v = await newVault(store)
        const keep = await add(store, webhook(v))
        const gone = await add(store, webhook(v))
        await newPush(store, v, at(100))
        await newPush(store, v, at(5000))
        assert.deepEqual(await store.enqueueDeliveries({ now: at(6000), since: at(0) }), { ok: true, value: 4 })
        assert.equal(why(await store.changeWebhook({ kind: 'delete', vaultId: randomUUID(), webhookId: gone.id })), 'not_found', 'another vault’s id')
        assert.equal(why(await store.changeWebhook({ kind: 'delete', vaultId: v, webhookId: gone.id })), 'ok')
        assert.equal(why(await store.changeWebhook({ kind: 'delete', vaultId: v, webhookId: gone.id })), 'not_found')
        assert.deepEqual(await deliveriesOf(store, v, gone.id, 10), [])
        assert.deepEqual(
          (await store.listWebhooks(v)).map((w) => w.id),
          [keep.id],
        )
        const taken = await claimed(store, { now: at(6000), leaseMs: 60_000, limit: 10, token: 't' })
        assert.equal(taken.length, 2, 'the deleted webhook’s deliveries are not claimed')
        for (const d of taken) await store.finishAttempt(attempt(d.id, 't', 'delivered', at(6100)))
        assert.deepEqual(
          await store.purgeExpired({ now: T0, codesBefore: T0, signInsBefore: T0, deliveriesBefore: at(1000) }),
          { ok: true, value: 1 },
          'only the finished delivery of the old event',
        )
        assert.deepEqual(
          (await deliveriesOf(store, v, keep.id, 10)).map((d) => d.occurredAt.getTime()),
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
        const signed = await add(store, webhook(v))
        await add(store, webhook(v, { format: 'slack', sealedSecret: null }))
        await add(store, webhook(other))
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
        const [d] = await claimed(store, { now: at(20), leaseMs: 1000, limit: 5, token: 't' }).then((l) => l.filter((x) => x.webhook.id === signed.id))
        assert.ok(d?.sealedSecret && Buffer.from(d.sealedSecret).equals(Buffer.from(fresh)), 'the resealed secret is stored')
      })
    },
  },
]

function attempt(deliveryId: string, claimToken: string, outcome: 'delivered' | 'retry' | 'failed', when: Date) {
  return { deliveryId, claimToken, at: when, httpStatus: outcome === 'delivered' ? 204 : null, error: null, outcome, nextAttemptAt: null }
}

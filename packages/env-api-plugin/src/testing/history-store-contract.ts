import type { ImportStore } from '../adapters/import-store.js'
import assert from 'node:assert/strict'
import { resealForTest, storeFirstKey } from './keys.js'
import { randomBytes, randomUUID } from 'node:crypto'
import type { ChangeEntry, HistoryStore, NewChangeSet, VariablesChange } from '../adapters/history-store.js'
import type { AccessLogEntry, SealedVariable, StorageLimit, VaultStore } from '../adapters/vault-store.js'
import { firstChanges } from '../domain/history.js'
import { StorageError } from '../errors.js'
import type { ContractRunner, VaultStoreProbe } from './vault-store-contract.js'
import { storedValue, changeSetById, versionsOf } from './contract/fixtures.js'

/**
 * The contract every history store must meet (adapters/history-store.ts),
 * as plain async cases that throw. The store is the backend's whole
 * storage (history writes go with the vault store's rows).
 */
export interface HistoryStoreFixture {
  readonly store: VaultStore & ImportStore & HistoryStore
  readonly probe: VaultStoreProbe
  close(): Promise<void>
}

export type MakeHistoryStore = () => Promise<HistoryStoreFixture>

export function runHistoryStoreContract(t: ContractRunner, make: MakeHistoryStore): void {
  for (const c of historyStoreContract) {
    t.test(c.name, async (t) => {
      await c.run(make)
      t.pass('the case holds')
    })
  }
}

const T0 = new Date('2026-11-21T10:00:00.000Z')
const DAY = 86_400_000
const OWNER = 'person-owner'
const LIMIT: StorageLimit = { maxVariables: 10_000, maxBytes: 20 * 1024 * 1024 }
const at = (ms: number): Date => new Date(T0.getTime() + ms)
const bytes = (n = 40): Uint8Array => new Uint8Array(randomBytes(n))
const same = (a: Uint8Array | null | undefined, b: Uint8Array | null | undefined): boolean =>
  a === b || (a != null && b != null && Buffer.from(a).equals(Buffer.from(b)))

function log(vaultId: string, action: AccessLogEntry['action'] = 'variable_set', names: string[] = []): AccessLogEntry {
  return {
    vaultId,
    at: T0,
    personId: OWNER,
    signInId: null,
    clientId: null,
    action,
    environment: 'development',
    names,
    address: null,
    subject: null,
    detail: null,
  }
}

async function withStore(make: MakeHistoryStore, fn: (f: HistoryStoreFixture) => Promise<void>): Promise<void> {
  const f = await make()
  try {
    await fn(f)
  } finally {
    await f.close()
  }
}

async function newVault(store: VaultStore): Promise<string> {
  const id = randomUUID()
  await store.createVault(
    {
      id,
      name: `vault-${id.slice(0, 8)}`,
      ownerId: OWNER,
      plan: 'self-hosted',
      environments: [
        { name: 'development', ownersOnly: false },
        { name: 'production', ownersOnly: true },
      ],
      now: T0,
    },
    log(id, 'vault_created'),
  )
  return id
}

/**
 * One change: `set` are new values (kind added unless `was` has the name),
 * `del` names to delete; the entries carry random "history-sealed" bytes.
 */
function change(
  vaultId: string,
  version: number,
  o: { set?: SealedVariable[]; del?: string[]; was?: Record<string, Uint8Array>; now?: Date; how?: NewChangeSet['how']; ref?: string | null; env?: string },
): VariablesChange {
  const was = o.was ?? {}
  const entries: ChangeEntry[] = [
    ...(o.set ?? []).map((v): ChangeEntry => ({ name: v.name, kind: was[v.name] ? 'changed' : 'added', before: was[v.name] ?? null, after: bytes() })),
    ...(o.del ?? []).map((name): ChangeEntry => ({ name, kind: 'deleted', before: was[name] ?? bytes(), after: null })),
  ]
  const now = o.now ?? T0
  const environment = o.env ?? 'development'
  return {
    vaultId,
    environment,
    set: o.set ?? [],
    delete: o.del ?? [],
    ifVersion: version,
    by: OWNER,
    now,
    limit: LIMIT,
    changeSet: { id: randomUUID(), vaultId, environment, at: now, by: OWNER, how: o.how ?? 'page', ref: o.ref ?? null, entries },
  }
}

async function version(store: HistoryStore, vaultId: string, env = 'development'): Promise<number> {
  return (await store.readCurrent(vaultId, env)).version
}

export const historyStoreContract: readonly { name: string; run(make: MakeHistoryStore): Promise<void> }[] = [
  {
    name: 'changeVariables writes values, deletes, its change set and its log entry together; the version moves',
    run: (make) =>
      withStore(make, async ({ store }) => {
        const id = await newVault(store)
        const v0 = await version(store, id)
        const a = { name: 'A', sealed: bytes() }
        const b = { name: 'B', sealed: bytes() }
        const first = change(id, v0, { set: [b, a] })
        const r1 = await store.changeVariables(first, log(id, 'variable_set', ['A', 'B']))
        assert.equal(r1.ok, true)
        const v1 = await version(store, id)
        assert.ok(r1.ok && r1.value === v1 && v1 !== v0)
        const cur = await store.readCurrent(id, 'development')
        assert.deepEqual(
          cur.variables.map((v) => v.name),
          ['A', 'B'],
        )
        assert.ok(same(cur.variables[0]?.sealed, a.sealed))
        assert.deepEqual(
          (await store.readCurrent(id, 'development', { names: ['B', 'Z'] })).variables.map((v) => v.name),
          ['B'],
        )
        const a2 = { name: 'A', sealed: bytes() }
        const second = change(id, v1, { set: [a2], del: ['B'], was: { A: bytes(), B: bytes() }, how: 'revert', ref: first.changeSet.id })
        assert.equal((await store.changeVariables(second, log(id, 'change_reverted', ['A', 'B']))).ok, true)
        assert.deepEqual(
          (await store.readCurrent(id, 'development')).variables.map((v) => v.name),
          ['A'],
        )
        assert.ok(same((await storedValue(store, id, 'development', 'A'))?.sealed, a2.sealed))

        const detail = await changeSetById(store, id, second.changeSet.id)
        assert.ok(detail)
        assert.equal(detail.how, 'revert')
        assert.equal(detail.ref, first.changeSet.id)
        assert.equal(detail.by, OWNER)
        assert.equal(detail.environment, 'development')
        assert.deepEqual(detail.changed, ['A'])
        assert.deepEqual(detail.deleted, ['B'])
        assert.deepEqual(detail.added, [])
        for (const e of second.changeSet.entries) {
          const got = detail.entries.find((x) => x.name === e.name)
          assert.ok(got && got.kind === e.kind && same(got.before, e.before) && same(got.after, e.after), `entry ${e.name} byte for byte`)
        }
        assert.equal(await changeSetById(store, await newVault(store), second.changeSet.id), null, 'another vault does not see it')

        const list = await store.listChangeSets(id, { environment: 'development', limit: 10 })
        assert.deepEqual(
          list.map((c) => c.id),
          [second.changeSet.id, first.changeSet.id],
          'newest first',
        )
        assert.ok((list[0]?.seq ?? 0) > (list[1]?.seq ?? 0))
        assert.deepEqual(list[1]?.added, ['A', 'B'])
        assert.deepEqual(
          (await store.listChangeSets(id, { environment: 'development', limit: 10, beforeSeq: list[0]?.seq })).map((c) => c.id),
          [first.changeSet.id],
          'paged by seq',
        )
        assert.deepEqual(
          (await store.listChangeSets(id, { ref: first.changeSet.id, limit: 10 })).map((c) => c.id),
          [second.changeSet.id],
          'found by ref',
        )
        assert.deepEqual(await store.listChangeSets(id, { environment: 'production', limit: 10 }), [])
        const actions = (await store.listAccessLog(id, { limit: 10 })).map((l) => l.action)
        assert.deepEqual(actions.slice(0, 2), ['change_reverted', 'variable_set'])
      }),
  },
  {
    name: 'a stale version, a delete of what is gone, a stale key or the limit writes nothing at all',
    run: (make) =>
      withStore(make, async ({ store }) => {
        const id = await newVault(store)
        const v0 = await version(store, id)
        assert.equal((await store.changeVariables(change(id, v0, { set: [{ name: 'A', sealed: bytes() }] }), log(id))).ok, true)
        const logs = (await store.listAccessLog(id, { limit: 100 })).length
        const sets = (await store.listChangeSets(id, { limit: 100 })).length
        const stale = await store.changeVariables(change(id, v0, { set: [{ name: 'B', sealed: bytes() }] }), log(id))
        assert.deepEqual(stale, { ok: false, reason: 'changed' })
        const v1 = await version(store, id)
        const gone = await store.changeVariables(change(id, v1, { del: ['NOPE'] }), log(id))
        assert.deepEqual(gone, { ok: false, reason: 'changed' })
        const key = await storeFirstKey(store, id, bytes(60))
        const wrongKey = await store.changeVariables({ ...change(id, v1, { set: [{ name: 'B', sealed: bytes() }] }), sealedUnder: bytes(60) }, log(id))
        assert.deepEqual(wrongKey, { ok: false, reason: 'stale_key' })
        const over = await store.changeVariables(
          { ...change(id, v1, { set: [{ name: 'B', sealed: bytes() }] }), limit: { maxVariables: 1, maxBytes: LIMIT.maxBytes }, sealedUnder: key },
          log(id),
        )
        assert.equal(over.ok, false)
        assert.ok(!over.ok && over.reason === 'storage_limit' && over.limit === 'variables')
        assert.equal(await version(store, id), v1)
        assert.equal(await storedValue(store, id, 'development', 'B'), null)
        assert.equal((await store.listAccessLog(id, { limit: 100 })).length, logs)
        assert.equal((await store.listChangeSets(id, { limit: 100 })).length, sets)
        // history never counts against the limit: 30 changes of one variable fit a one-variable plan
        let v = v1
        for (let i = 0; i < 30; i++) {
          const r = await store.changeVariables(
            { ...change(id, v, { set: [{ name: 'A', sealed: bytes() }], was: { A: bytes() } }), limit: { maxVariables: 1, maxBytes: 4096 } },
            log(id),
          )
          assert.ok(r.ok, `change ${i} within the limit`)
          v = r.value
        }
        await assert.rejects(
          store.changeVariables(change(id, 0, { env: 'nope', set: [{ name: 'A', sealed: bytes() }] }), log(id)),
          (e: unknown) => e instanceof StorageError && e.sqlstate === '23503',
        )
      }),
  },
  {
    name: 'a change whose log entry cannot be written leaves no value and no change set',
    run: (make) =>
      withStore(make, async ({ store, probe }) => {
        const id = await newVault(store)
        const restore = await probe.breakWrites('access_log')
        try {
          await assert.rejects(store.changeVariables(change(id, await version(store, id), { set: [{ name: 'A', sealed: bytes() }] }), log(id)))
        } finally {
          await restore()
        }
        assert.equal(await storedValue(store, id, 'development', 'A'), null)
        assert.deepEqual(await store.listChangeSets(id, { limit: 10 }), [])
      }),
  },
  {
    name: 'applying a push writes its change set in the same transaction, guarded by the version',
    run: (make) =>
      withStore(make, async ({ store }) => {
        const id = await newVault(store)
        const importId = randomUUID()
        const created = await store.createImport(
          {
            id: importId,
            vaultId: id,
            environment: 'development',
            senderId: OWNER,
            signInId: null,
            values: [{ name: 'P', sealed: bytes() }],
            refused: [],
            createdAt: T0,
            expiresAt: at(DAY),
            limit: LIMIT,
          },
          log(id, 'push_created', ['P']),
        )
        assert.ok(created.ok)
        const v0 = await version(store, id)
        const cs: NewChangeSet = {
          id: randomUUID(),
          vaultId: id,
          environment: 'development',
          at: at(1000),
          by: OWNER,
          how: 'push',
          ref: importId,
          entries: [{ name: 'P', kind: 'added', before: null, after: bytes() }],
        }
        const stale = await store.decideImport(
          { importId, decision: 'applied', by: OWNER, now: at(1000), ifVersion: v0 + 7, changeSet: cs },
          log(id, 'push_applied'),
        )
        assert.equal(stale.ok, false)
        assert.ok(!stale.ok && stale.reason === 'changed')
        assert.equal((await store.getImport(importId, at(1000)))?.status, 'pending')
        assert.equal(await storedValue(store, id, 'development', 'P'), null)
        assert.deepEqual(await store.listChangeSets(id, { limit: 10 }), [])
        const r = await store.decideImport({ importId, decision: 'applied', by: OWNER, now: at(1000), ifVersion: v0, changeSet: cs }, log(id, 'push_applied'))
        assert.ok(r.ok)
        const found = await store.listChangeSets(id, { ref: importId, limit: 5 })
        assert.equal(found.length, 1)
        assert.equal(found[0]?.how, 'push')
        assert.deepEqual(found[0]?.added, ['P'])
        assert.equal(found[0]?.at.getTime(), at(1000).getTime())
      }),
  },
  {
    name: "versions of a variable, newest first, and each name's first change after a point",
    run: (make) =>
      withStore(make, async ({ store }) => {
        const id = await newVault(store)
        const ids: string[] = []
        const afters: Uint8Array[] = []
        let v = await version(store, id)
        const steps = [{ set: ['A', 'B'] }, { set: ['A'] }, { del: ['B'] }, { set: ['A', 'C'] }]
        for (const s of steps) {
          const c = change(id, v, {
            set: (s.set ?? []).map((name) => ({ name, sealed: bytes() })),
            del: s.del,
            was: Object.fromEntries((await store.readCurrent(id, 'development')).variables.map((x) => [x.name, x.sealed])),
          })
          const r = await store.changeVariables(c, log(id))
          assert.ok(r.ok)
          v = r.value
          ids.push(c.changeSet.id)
          afters.push(c.changeSet.entries.find((e) => e.name === 'A')?.after ?? new Uint8Array())
        }
        const versions = await versionsOf(store, id, 'development', 'A', 10)
        assert.deepEqual(
          versions.map((x) => x.changeSet.id),
          [ids[3], ids[1], ids[0]],
        )
        assert.ok(same(versions[0]?.entry.after, afters[3]))
        assert.equal(versions[2]?.entry.kind, 'added')
        assert.equal((await versionsOf(store, id, 'development', 'A', 1)).length, 1)
        const seq0 = (await changeSetById(store, id, ids[0] as string))?.seq as number
        const first = firstChanges(await store.listChangeSets(id, { environment: 'development', afterSeq: seq0, entries: true }))
        assert.deepEqual(
          first.map((f) => [f.name, f.changeSetId]),
          [
            ['A', ids[1]],
            ['B', ids[2]],
            ['C', ids[3]],
          ],
        )
        assert.equal(first[1]?.entry.kind, 'deleted')
        assert.deepEqual(await store.listChangeSets(id, { environment: 'production', afterSeq: 0, entries: true }), [])
      }),
  },
  {
    name: "retention drops old versions beyond each variable's newest `keep`, and emptied change sets",
    run: (make) =>
      withStore(make, async ({ store }) => {
        const id = await newVault(store)
        let v = await version(store, id)
        // A changes 6 times on day 0..5, B once on day 0; then A once on day 100
        const write = async (names: string[], day: number) => {
          const r = await store.changeVariables(
            change(id, v, {
              set: names.map((name) => ({ name, sealed: bytes() })),
              was: Object.fromEntries(names.map((n) => [n, bytes()])),
              now: at(day * DAY),
            }),
            log(id),
          )
          assert.ok(r.ok)
          v = r.value
        }
        await write(['A', 'B'], 0)
        for (let d = 1; d < 6; d++) await write(['A'], d)
        await write(['A'], 100)
        const pruned = await store.pruneHistory(at(50 * DAY), 3)
        const removed = pruned.ok ? pruned.value : -1
        // A: 7 versions, keep newest 3 (days 100, 5, 4) → days 0..3 go (4); B: its only version stays
        assert.equal(removed, 4)
        const a = await versionsOf(store, id, 'development', 'A', 50)
        assert.deepEqual(
          a.map((x) => (x.changeSet.at.getTime() - T0.getTime()) / DAY),
          [100, 5, 4],
        )
        assert.equal((await versionsOf(store, id, 'development', 'B', 50)).length, 1)
        const sets = await store.listChangeSets(id, { limit: 50 })
        assert.equal(sets.length, 4, 'day 0 (B left), days 4, 5 and 100; days 1..3 emptied and gone')
        assert.deepEqual(sets[sets.length - 1]?.changed, ['B'])
        assert.deepEqual(await store.pruneHistory(at(50 * DAY), 3), { ok: true, value: 0 }, 'twice is a no-op')
      }),
  },
  {
    name: 'resealVault hands over every kept version and writes the resealed bytes back',
    run: (make) =>
      withStore(make, async ({ store }) => {
        const id = await newVault(store)
        await storeFirstKey(store, id, bytes(60))
        const c = change(id, await version(store, id), { set: [{ name: 'A', sealed: bytes() }], del: ['B'], was: { A: bytes() } })
        // B must exist to be deleted: write it first
        const pre = change(id, await version(store, id), { set: [{ name: 'B', sealed: bytes() }] })
        assert.ok((await store.changeVariables(pre, log(id))).ok)
        assert.ok((await store.changeVariables({ ...c, ifVersion: await version(store, id) }, log(id))).ok)
        const seen: string[] = []
        const fresh = new Map<string, Uint8Array>()
        assert.equal(
          await resealForTest(store, id, async (cur) => {
            for (const h of cur.history) seen.push(`${h.changeSetId === c.changeSet.id ? 'c' : 'pre'}:${h.name}:${h.side}`)
            return {
              wrappedKey: bytes(60),
              variables: cur.variables.map((x) => ({ ...x, sealed: bytes() })),
              staged: cur.staged,
              history: cur.history.map((h) => {
                const b = bytes()
                fresh.set(`${h.changeSetId}:${h.name}:${h.side}`, b)
                return { ...h, sealed: b }
              }),
            }
          }),
          true,
        )
        assert.deepEqual(seen.sort(), ['c:A:after', 'c:A:before', 'c:B:before', 'pre:B:after'])
        const detail = await changeSetById(store, id, c.changeSet.id)
        const a = detail?.entries.find((e) => e.name === 'A')
        assert.ok(same(a?.before, fresh.get(`${c.changeSet.id}:A:before`)) && same(a?.after, fresh.get(`${c.changeSet.id}:A:after`)))
        assert.equal(detail?.entries.find((e) => e.name === 'B')?.after, null)
      }),
  },
]

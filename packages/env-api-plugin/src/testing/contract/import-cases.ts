// The vault store contract, part: pushes: create, expire, decide, list.
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import type { StorageLimit } from '../../adapters/vault-store.js'
import type { VaultStoreContractCase } from './types.js'
import {
  T0,
  MINUTE,
  DAY,
  OWNER,
  EDITOR,
  at,
  sealed,
  sv,
  entry,
  put,
  withStore,
  newVault,
  newImport,
  same,
  namesOf,
  rejectsWith,
  storedValue,
  stagedValues,
  variableMetas,
  readLogged,
} from './fixtures.js'
import { writeTestValue } from '../write-value.js'

export const importCases: readonly VaultStoreContractCase[] = [
  {
    name: 'createImport: pending, names in order, overwrites, refused lines, staged values, push_created logged',
    run: (make) =>
      withStore(make, async ({ store, probe }) => {
        const id = await newVault(store)
        await writeTestValue(store, put(id, 'development', sv('EXISTS'), OWNER, T0), entry(id, 'variable_set'))
        await writeTestValue(store, put(id, 'preview', sv('ELSEWHERE'), OWNER, T0), entry(id, 'variable_set'))
        const values = [sv('NEW_B'), sv('EXISTS'), sv('ELSEWHERE'), sv('NEW_A')]
        const refused = [
          { line: 3, name: '', reason: 'not a NAME=value line' },
          { line: 9, name: 'NEW_A', reason: 'duplicate of line 12, which was sent' },
        ]
        const input = newImport(id, values, { refused })
        const r = await store.createImport(input, entry(id, 'push_created', { personId: EDITOR, names: ['X'] }))
        assert.ok(r.ok)
        assert.deepEqual(r.value, {
          id: input.id,
          vaultId: id,
          environment: 'development',
          senderId: EDITOR,
          signInId: 'sign-in-2',
          status: 'pending',
          names: ['ELSEWHERE', 'EXISTS', 'NEW_A', 'NEW_B'],
          overwrites: ['EXISTS'],
          deletes: [],
          refused,
          createdAt: T0,
          expiresAt: at(7 * DAY),
          decidedAt: null,
          decidedBy: null,
          reason: null,
        })
        assert.deepEqual(await store.getImport(input.id, T0), r.value, 'read back the same')
        const staged = await stagedValues(store, input.id)
        assert.deepEqual(
          staged.map((v) => v.name),
          ['ELSEWHERE', 'EXISTS', 'NEW_A', 'NEW_B'],
        )
        for (const v of values) same(staged.find((s) => s.name === v.name)?.sealed, v.sealed, v.name)
        assert.deepEqual(
          (await variableMetas(store, id, 'development')).map((m) => m.name),
          ['EXISTS'],
          'staged values are not variables',
        )
        const [last] = await store.listAccessLog(id, { limit: 1 })
        assert.equal(last?.action, 'push_created')
        assert.equal(last?.personId, EDITOR)
        assert.equal(await probe.stagedValueCount(input.id), 4)
        assert.equal(await store.getImport(randomUUID(), T0), null)
        assert.deepEqual(await stagedValues(store, randomUUID()), [])
      }),
  },
  {
    name: 'createImport with an existing id: 23505, nothing else written',
    run: (make) =>
      withStore(make, async ({ store, probe }) => {
        const id = await newVault(store)
        const first = newImport(id, [sv('A')])
        assert.ok((await store.createImport(first, entry(id, 'push_created'))).ok)
        const logs = (await store.listAccessLog(id, { limit: 100 })).length
        const canary = sealed(32)
        const e = await rejectsWith(store.createImport({ ...first, values: [{ name: 'B', sealed: canary }] }, entry(id, 'push_created')), '23505')
        assert.ok(!e.message.includes(Buffer.from(canary).toString('hex')) && !e.message.includes(Buffer.from(canary).toString('base64')))
        assert.deepEqual(
          (await stagedValues(store, first.id)).map((v) => v.name),
          ['A'],
        )
        assert.equal((await store.listAccessLog(id, { limit: 100 })).length, logs)
        assert.equal(await probe.importCount(id), 1)
      }),
  },
  {
    name: 'createImport is one transaction: a failing log entry or staged value leaves nothing',
    run: (make) =>
      withStore(make, async ({ store, probe }) => {
        const id = await newVault(store)
        const logged = await probe.accessLogCount(id)
        for (const [what, name] of [
          ['access_log', undefined],
          ['import_values', 'SECOND'],
        ] as const) {
          const input = newImport(id, [sv('FIRST'), sv('SECOND'), sv('THIRD')])
          const undo = await probe.breakWrites(what, name)
          try {
            await assert.rejects(store.createImport(input, entry(id, 'push_created')), what)
          } finally {
            await undo()
          }
          assert.equal(await store.getImport(input.id, T0), null, what)
          assert.equal(await probe.stagedValueCount(input.id), 0, what)
          assert.equal(await probe.importCount(id), 0, what)
          assert.equal(await probe.accessLogCount(id), logged, what)
        }
      }),
  },
  {
    name: 'storage limit: variables and staged values of pending pushes count, the new push included',
    run: (make) =>
      withStore(make, async ({ store, probe }) => {
        const id = await newVault(store)
        await writeTestValue(store, put(id, 'development', sv('A', 100), OWNER, T0), entry(id, 'variable_set'))
        await writeTestValue(store, put(id, 'preview', sv('B', 100), OWNER, T0), entry(id, 'variable_set'))
        const pending = await store.createImport(newImport(id, [sv('C', 100)]), entry(id, 'push_created'))
        assert.ok(pending.ok)
        // 3 stored or staged; another vault's data does not count
        const other = await newVault(store)
        await writeTestValue(store, put(other, 'development', sv('Z', 1000), OWNER, T0), entry(other, 'variable_set'))

        const byCount: StorageLimit = { maxVariables: 5, maxBytes: 1_000_000 }
        const atLimit = await store.createImport({ ...newImport(id, [sv('D', 10), sv('E', 10)]), limit: byCount }, entry(id, 'push_created'))
        assert.ok(atLimit.ok, 'exactly at the limit is allowed')
        const over = await store.createImport({ ...newImport(id, [sv('F', 10)]), limit: byCount }, entry(id, 'push_created'))
        assert.deepEqual(over, { ok: false, reason: 'storage_limit', limit: 'variables', usage: 6, max: 5 }, 'usage counts the new push')

        // bytes: 100 + 100 + 100 + 10 + 10 = 320 used
        const byBytes: StorageLimit = { maxVariables: 1000, maxBytes: 400 }
        const fits = await store.createImport({ ...newImport(id, [sv('G', 80)]), limit: byBytes }, entry(id, 'push_created'))
        assert.ok(fits.ok, '320 + 80 = 400 fits')
        const logs = (await store.listAccessLog(id, { limit: 100 })).length
        const rejected = newImport(id, [sv('H', 1)])
        const tooBig = await store.createImport({ ...rejected, limit: byBytes }, entry(id, 'push_created'))
        assert.deepEqual(tooBig, { ok: false, reason: 'storage_limit', limit: 'bytes', usage: 401, max: 400 }, 'usage counts the new push')
        assert.equal(await store.getImport(rejected.id, T0), null, 'a refused push is not stored')
        assert.equal((await store.listAccessLog(id, { limit: 100 })).length, logs, 'nor logged')
        assert.equal(await probe.stagedValueCount(rejected.id), 0)

        // decided pushes free their staged space
        await store.decideImport({ importId: fits.value.id, decision: 'rejected', by: OWNER, now: T0 }, entry(id, 'push_rejected'))
        assert.ok((await store.createImport({ ...newImport(id, [sv('H', 80)]), limit: byBytes }, entry(id, 'push_created'))).ok)
      }),
  },
  {
    name: 'getImport expires a pending push lazily: decidedAt = expiresAt, staged values deleted, push_expired logged once',
    run: (make) =>
      withStore(make, async ({ store, probe }) => {
        const id = await newVault(store)
        const input = newImport(id, [sv('A'), sv('B')], { expiresAt: at(DAY) })
        assert.ok((await store.createImport(input, entry(id, 'push_created'))).ok)
        assert.equal((await store.getImport(input.id, at(DAY - 1)))?.status, 'pending')
        assert.equal((await stagedValues(store, input.id)).length, 2)
        const r = await store.getImport(input.id, at(DAY))
        assert.equal(r?.status, 'expired')
        assert.equal(r?.decidedAt?.getTime(), at(DAY).getTime())
        assert.equal(r?.decidedBy, null)
        assert.deepEqual(r?.names, ['A', 'B'], 'names are kept')
        assert.deepEqual(namesOf(await stagedValues(store, input.id)), [])
        assert.equal(await probe.stagedValueCount(input.id), 0)
        const expiredLogs = async () => (await store.listAccessLog(id, { limit: 100, action: 'push_expired' })).length
        assert.equal(await expiredLogs(), 1)
        const [log] = await store.listAccessLog(id, { limit: 1, action: 'push_expired' })
        assert.deepEqual(log?.names, ['A', 'B'])
        assert.equal(log?.environment, 'development')
        const again = await store.getImport(input.id, at(2 * DAY))
        assert.equal(again?.decidedAt?.getTime(), at(DAY).getTime(), 'terminal: never changes')
        assert.equal(await expiredLogs(), 1)
        assert.deepEqual(await variableMetas(store, id, 'development'), [], 'nothing applied')
      }),
  },
  {
    name: 'expiring is atomic too: if push_expired cannot be logged, the push stays pending with its staged values',
    run: (make) =>
      withStore(make, async ({ store, probe }) => {
        const id = await newVault(store)
        const a = newImport(id, [sv('A')], { expiresAt: at(DAY) })
        const b = newImport(id, [sv('B')], { expiresAt: at(DAY) })
        for (const i of [a, b]) assert.ok((await store.createImport(i, entry(id, 'push_created'))).ok)
        const undo = await probe.breakWrites('access_log')
        try {
          await assert.rejects(store.getImport(a.id, at(DAY)), 'lazy expiry')
          await assert.rejects(store.expireImports(at(DAY)), 'sweep')
        } finally {
          await undo()
        }
        for (const i of [a, b]) {
          assert.equal((await store.getImport(i.id, at(DAY - 1)))?.status, 'pending')
          assert.equal(await probe.stagedValueCount(i.id), 1)
        }
        assert.deepEqual(await store.expireImports(at(DAY)), { ok: true, value: 2 }, 'expires once the log works')
      }),
  },
  {
    name: 'decideImport applied: every staged value becomes a variable byte for byte, in one go',
    run: (make) =>
      withStore(make, async ({ store, probe }) => {
        const id = await newVault(store)
        const old = sv('A')
        await writeTestValue(store, put(id, 'development', old, OWNER, T0), entry(id, 'variable_set'))
        const values = [sv('A'), sv('B'), sv('C')]
        const input = newImport(id, values)
        assert.ok((await store.createImport(input, entry(id, 'push_created'))).ok)
        const r = await store.decideImport(
          { importId: input.id, decision: 'applied', by: OWNER, now: at(MINUTE) },
          entry(id, 'push_applied', { names: ['A', 'B', 'C'] }),
        )
        assert.ok(r.ok)
        assert.equal(r.value.status, 'applied')
        assert.equal(r.value.decidedAt?.getTime(), at(MINUTE).getTime())
        assert.equal(r.value.decidedBy, OWNER)
        assert.deepEqual(await store.getImport(input.id, at(MINUTE)), r.value)
        const read = await readLogged(store, id, 'development', entry(id, 'read'))
        assert.deepEqual(
          read.variables.map((v) => v.name),
          ['A', 'B', 'C'],
        )
        for (const v of values) same(read.variables.find((x) => x.name === v.name)?.sealed, v.sealed, v.name)
        const meta = await variableMetas(store, id, 'development')
        assert.ok(meta.every((m) => m.updatedBy === OWNER && m.updatedAt.getTime() === at(MINUTE).getTime()))
        assert.deepEqual(namesOf(await stagedValues(store, input.id)), [], 'staged values deleted')
        assert.equal(await probe.stagedValueCount(input.id), 0)
        const actions = (await store.listAccessLog(id, { limit: 100 })).map((l) => l.action)
        assert.ok(actions.includes('push_applied'))
        // terminal
        const twice = await store.decideImport({ importId: input.id, decision: 'rejected', by: EDITOR, now: at(2 * MINUTE) }, entry(id, 'push_rejected'))
        assert.deepEqual(twice, { ok: false, reason: 'not_pending' })
        const kept = await store.getImport(input.id, at(2 * MINUTE))
        assert.equal(kept?.status, 'applied')
        assert.equal(kept?.decidedBy, OWNER)
        assert.equal((await store.listAccessLog(id, { limit: 100, action: 'push_rejected' })).length, 0)
      }),
  },
  {
    name: 'a push that deletes names (issue 25): listed in names and deletes, no value staged; applied deletes them with the values, rejected deletes nothing',
    run: (make) =>
      withStore(make, async ({ store, probe }) => {
        const id = await newVault(store)
        const a = sv('A')
        for (const name of ['A', 'GONE', 'KEPT'])
          await writeTestValue(store, put(id, 'development', name === 'A' ? a : sv(name), OWNER, T0), entry(id, 'variable_set'))
        const b = sv('B')
        const input = newImport(id, [b], { deletes: ['NOT_THERE', 'GONE'] })
        const r = await store.createImport(input, entry(id, 'push_created'))
        assert.ok(r.ok)
        assert.deepEqual(r.value.names, ['B', 'GONE', 'NOT_THERE'])
        assert.deepEqual(r.value.deletes, ['GONE', 'NOT_THERE'])
        assert.deepEqual(r.value.overwrites, [], 'a deletion is not an overwrite')
        assert.deepEqual(await store.getImport(input.id, T0), r.value, 'read back the same')
        assert.deepEqual(namesOf(await stagedValues(store, input.id)), ['B'], 'no value is staged for a deletion')
        assert.equal(await probe.stagedValueCount(input.id), 1)
        const rejected = newImport(id, [], { deletes: ['KEPT'] })
        assert.ok((await store.createImport(rejected, entry(id, 'push_created'))).ok)
        assert.ok((await store.decideImport({ importId: rejected.id, decision: 'rejected', by: OWNER, now: at(MINUTE) }, entry(id, 'push_rejected'))).ok)
        assert.ok(await storedValue(store, id, 'development', 'KEPT'), 'a rejected deletion deletes nothing')
        const applied = await store.decideImport({ importId: input.id, decision: 'applied', by: OWNER, now: at(MINUTE) }, entry(id, 'push_applied'))
        assert.ok(applied.ok)
        assert.deepEqual(applied.value.deletes, ['GONE', 'NOT_THERE'])
        assert.deepEqual(
          (await variableMetas(store, id, 'development')).map((m) => m.name),
          ['A', 'B', 'KEPT'],
          'GONE deleted, B written, the rest untouched',
        )
        same((await storedValue(store, id, 'development', 'B'))?.sealed, b.sealed)
        same((await storedValue(store, id, 'development', 'A'))?.sealed, a.sealed)
        assert.deepEqual(await store.getImport(input.id, at(MINUTE)), applied.value)
      }),
  },
  {
    name: 'decideImport rejected: variables untouched, staged values deleted, names kept',
    run: (make) =>
      withStore(make, async ({ store, probe }) => {
        const id = await newVault(store)
        const keep = sv('A')
        await writeTestValue(store, put(id, 'development', keep, OWNER, T0), entry(id, 'variable_set'))
        const input = newImport(id, [sv('A'), sv('B')])
        assert.ok((await store.createImport(input, entry(id, 'push_created'))).ok)
        const r = await store.decideImport({ importId: input.id, decision: 'rejected', by: EDITOR, now: at(MINUTE) }, entry(id, 'push_rejected'))
        assert.ok(r.ok)
        assert.equal(r.value.status, 'rejected')
        assert.equal(r.value.decidedBy, EDITOR)
        assert.deepEqual(r.value.names, ['A', 'B'])
        same((await storedValue(store, id, 'development', 'A'))?.sealed, keep.sealed)
        assert.equal(await storedValue(store, id, 'development', 'B'), null)
        assert.deepEqual(namesOf(await stagedValues(store, input.id)), [])
        assert.equal(await probe.stagedValueCount(input.id), 0)
        assert.equal((await store.listAccessLog(id, { limit: 100, action: 'push_rejected' })).length, 1)
      }),
  },
  {
    name: 'decideImport on a push past its expiry: not applied, recorded as expired, ok false',
    run: (make) =>
      withStore(make, async ({ store }) => {
        const id = await newVault(store)
        const input = newImport(id, [sv('A')], { expiresAt: at(DAY) })
        assert.ok((await store.createImport(input, entry(id, 'push_created'))).ok)
        const r = await store.decideImport({ importId: input.id, decision: 'applied', by: OWNER, now: at(DAY) }, entry(id, 'push_applied'))
        assert.deepEqual(r, { ok: false, reason: 'not_pending' })
        const expired = await store.getImport(input.id, T0) // read at a time before its expiry: as stored
        assert.equal(expired?.status, 'expired')
        assert.equal(expired?.decidedAt?.getTime(), at(DAY).getTime())
        assert.equal(await storedValue(store, id, 'development', 'A'), null)
        assert.deepEqual(namesOf(await stagedValues(store, input.id)), [])
        assert.equal((await store.getImport(input.id, at(DAY)))?.status, 'expired')
        const actions = (await store.listAccessLog(id, { limit: 100 })).map((l) => l.action)
        assert.ok(actions.includes('push_expired'))
        assert.ok(!actions.includes('push_applied'))
      }),
  },
  {
    name: 'decideImport is all or none: one failing value leaves every variable and the push as they were',
    run: (make) =>
      withStore(make, async ({ store, probe }) => {
        const id = await newVault(store)
        const old = sv('A')
        await writeTestValue(store, put(id, 'development', old, OWNER, T0), entry(id, 'variable_set'))
        const version = (await readLogged(store, id, 'development', entry(id, 'read'))).version
        const input = newImport(id, [sv('A'), sv('B'), sv('C')])
        assert.ok((await store.createImport(input, entry(id, 'push_created'))).ok)
        for (const [what, name] of [
          ['variables', 'C'],
          ['access_log', undefined],
        ] as const) {
          const undo = await probe.breakWrites(what, name)
          try {
            await assert.rejects(store.decideImport({ importId: input.id, decision: 'applied', by: OWNER, now: at(MINUTE) }, entry(id, 'push_applied')), what)
          } finally {
            await undo()
          }
          same((await storedValue(store, id, 'development', 'A'))?.sealed, old.sealed, `${what}: A not overwritten`)
          assert.equal(await storedValue(store, id, 'development', 'B'), null, `${what}: B not written`)
          assert.equal(await probe.variableCount(id, 'development'), 1)
          assert.equal((await store.getImport(input.id, at(MINUTE)))?.status, 'pending', `${what}: still pending`)
          assert.equal(await probe.stagedValueCount(input.id), 3, `${what}: staged values kept`)
          assert.equal((await readLogged(store, id, 'development', entry(id, 'read'))).version, version)
        }
        const r = await store.decideImport({ importId: input.id, decision: 'applied', by: OWNER, now: at(MINUTE) }, entry(id, 'push_applied'))
        assert.ok(r.ok, 'applies once writes work again')
        assert.equal(await probe.variableCount(id, 'development'), 3)
      }),
  },
  {
    name: 'decideImport: two racing decisions, exactly one wins',
    run: (make) =>
      withStore(make, async ({ store }) => {
        const id = await newVault(store)
        const input = newImport(id, [sv('A')])
        assert.ok((await store.createImport(input, entry(id, 'push_created'))).ok)
        const [a, b] = await Promise.all([
          store.decideImport({ importId: input.id, decision: 'applied', by: OWNER, now: at(MINUTE) }, entry(id, 'push_applied')),
          store.decideImport({ importId: input.id, decision: 'rejected', by: EDITOR, now: at(MINUTE) }, entry(id, 'push_rejected')),
        ])
        assert.equal([a.ok, b.ok].filter(Boolean).length, 1)
        const final = await store.getImport(input.id, at(MINUTE))
        assert.equal(final?.status, a.ok ? 'applied' : 'rejected')
        assert.equal(final?.status === 'applied', (await storedValue(store, id, 'development', 'A')) !== null)
      }),
  },
  {
    name: 'expireImports sweeps the pending pushes due by now, and only those',
    run: (make) =>
      withStore(make, async ({ store, probe }) => {
        const id = await newVault(store)
        const due1 = newImport(id, [sv('A')], { expiresAt: at(DAY) })
        const due2 = newImport(id, [sv('B')], { expiresAt: at(2 * DAY) })
        const later = newImport(id, [sv('C')], { expiresAt: at(3 * DAY) })
        const decided = newImport(id, [sv('D')], { expiresAt: at(DAY) })
        for (const i of [due1, due2, later, decided]) assert.ok((await store.createImport(i, entry(id, 'push_created'))).ok)
        await store.decideImport({ importId: decided.id, decision: 'rejected', by: OWNER, now: at(MINUTE) }, entry(id, 'push_rejected'))
        assert.deepEqual(await store.expireImports(at(2 * DAY)), { ok: true, value: 2 })
        assert.deepEqual(await store.expireImports(at(2 * DAY)), { ok: true, value: 0 }, 'a second sweep finds nothing')
        for (const [i, exp] of [
          [due1, at(DAY)],
          [due2, at(2 * DAY)],
        ] as const) {
          const r = await store.getImport(i.id, at(2 * DAY))
          assert.equal(r?.status, 'expired')
          assert.equal(r?.decidedAt?.getTime(), exp.getTime())
          assert.equal(await probe.stagedValueCount(i.id), 0)
        }
        assert.equal((await store.getImport(later.id, at(2 * DAY)))?.status, 'pending')
        assert.equal((await store.getImport(decided.id, at(2 * DAY)))?.status, 'rejected')
        assert.equal((await stagedValues(store, later.id)).length, 1)
        assert.equal((await store.listAccessLog(id, { limit: 100, action: 'push_expired' })).length, 2)
      }),
  },
  {
    name: 'listImports: newest first, by status, limited, per vault',
    run: (make) =>
      withStore(make, async ({ store }) => {
        const id = await newVault(store)
        const other = await newVault(store)
        const made: string[] = []
        for (let i = 0; i < 4; i++) {
          const input = newImport(id, [sv(`V${i}`)], { createdAt: at(i * MINUTE) })
          assert.ok((await store.createImport(input, entry(id, 'push_created'))).ok)
          made.push(input.id)
        }
        assert.ok((await store.createImport(newImport(other, [sv('X')]), entry(other, 'push_created'))).ok)
        await store.decideImport({ importId: made[1] as string, decision: 'rejected', by: OWNER, now: at(DAY) }, entry(id, 'push_rejected'))
        assert.deepEqual(
          (await store.listImports(id, { limit: 10 })).map((i) => i.id),
          [...made].reverse(),
        )
        assert.deepEqual(
          (await store.listImports(id, { limit: 10, status: 'pending' })).map((i) => i.id),
          [made[3], made[2], made[0]],
        )
        assert.deepEqual(
          (await store.listImports(id, { limit: 10, status: 'rejected' })).map((i) => i.id),
          [made[1]],
        )
        assert.deepEqual(
          (await store.listImports(id, { limit: 2 })).map((i) => i.id),
          [made[3], made[2]],
        )
        assert.deepEqual(await store.listImports(randomUUID(), { limit: 10 }), [])
      }),
  },
]

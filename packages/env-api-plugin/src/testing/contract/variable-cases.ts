// The vault store contract, part: variables, versions, reads and the access log.
import assert from 'node:assert/strict'
import { storeFirstKey } from '../keys.js'
import { randomBytes, randomUUID } from 'node:crypto'
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
  deleteValue,
  storedValue,
  variableMetas,
  readLogged,
} from './fixtures.js'
import { writeTestValue } from '../write-value.js'

export const variableCases: readonly VaultStoreContractCase[] = [
  {
    name: 'sealedUnder: a write sealed under a key the vault no longer has is refused (stale_key), nothing written',
    run: (make) =>
      withStore(make, async ({ store }) => {
        const id = await newVault(store)
        const key = sealed(60)
        await storeFirstKey(store, id, key)
        assert.ok((await writeTestValue(store, put(id, 'development', sv('A'), OWNER, T0, { sealedUnder: key }), entry(id, 'variable_set'))).ok)
        const logged = (await store.listAccessLog(id, { limit: 100 })).length
        const stale = sealed(60)
        assert.deepEqual(await writeTestValue(store, put(id, 'development', sv('B'), OWNER, T0, { sealedUnder: stale }), entry(id, 'variable_set')), {
          ok: false,
          reason: 'stale_key',
        })
        assert.deepEqual(await store.createImport(newImport(id, [sv('C')], { sealedUnder: stale }), entry(id, 'push_created')), {
          ok: false,
          reason: 'stale_key',
        })
        assert.equal(await storedValue(store, id, 'development', 'B'), null)
        assert.deepEqual(await store.listImports(id, { limit: 10 }), [])
        assert.equal((await store.listAccessLog(id, { limit: 100 })).length, logged, 'nothing logged')
        assert.ok((await store.createImport(newImport(id, [sv('C')], { sealedUnder: key }), entry(id, 'push_created'))).ok)
        assert.equal((await store.findVaults({})).length, 1, 'findVaults({}) lists every vault')
      }),
  },
  {
    name: 'variables: set, get, list names, read in name order, byte for byte; delete',
    run: (make) =>
      withStore(make, async ({ store }) => {
        const id = await newVault(store)
        // a Uint8Array view into a larger buffer: only the view is stored
        const big = new Uint8Array(randomBytes(100))
        const view = big.subarray(10, 50)
        const values = [sv('ZED'), { name: 'ALPHA', sealed: view }, sv('_mid'), sv('Beta')]
        for (const [i, v] of values.entries()) {
          await writeTestValue(store, put(id, 'development', v, i % 2 ? OWNER : EDITOR, at(i * MINUTE)), entry(id, 'variable_set', { names: [v.name] }))
        }
        const names = ['ALPHA', 'Beta', 'ZED', '_mid']
        const meta = await variableMetas(store, id, 'development')
        assert.deepEqual(
          meta.map((m) => m.name),
          names,
        )
        const alpha = meta[0]
        assert.ok(alpha)
        assert.equal(alpha.updatedAt.getTime(), at(MINUTE).getTime())
        assert.equal(alpha.updatedBy, OWNER)
        assert.equal(meta[2]?.updatedBy, EDITOR)
        const got = await storedValue(store, id, 'development', 'ALPHA')
        assert.equal(got?.name, 'ALPHA')
        same(got?.sealed, view)
        assert.equal(got?.sealed.byteLength, 40)
        assert.equal(await storedValue(store, id, 'development', 'NOPE'), null)
        assert.equal(await storedValue(store, id, 'preview', 'ALPHA'), null, 'environments are separate')
        const { variables } = await readLogged(store, id, 'development', entry(id, 'read'))
        assert.deepEqual(
          variables.map((v) => v.name),
          names,
        )
        for (const v of values) same(variables.find((x) => x.name === v.name)?.sealed, v.sealed, v.name)
        // overwrite
        const next = sealed()
        await writeTestValue(store, put(id, 'development', { name: 'ZED', sealed: next }, OWNER, at(DAY)), entry(id, 'variable_set'))
        same((await storedValue(store, id, 'development', 'ZED'))?.sealed, next)
        assert.equal((await variableMetas(store, id, 'development')).find((m) => m.name === 'ZED')?.updatedAt.getTime(), at(DAY).getTime())
        // delete
        assert.deepEqual(
          await deleteValue(
            store,
            { vaultId: id, environment: 'development', name: 'ZED', by: OWNER, now: T0 },
            entry(id, 'variable_deleted', { names: ['ZED'] }),
          ),
          { ok: true },
        )
        assert.deepEqual(
          await deleteValue(
            store,
            { vaultId: id, environment: 'development', name: 'ZED', by: OWNER, now: T0 },
            entry(id, 'variable_deleted', { names: ['ZED'] }),
          ),
          { ok: false, reason: 'absent' },
        )
        assert.equal(await storedValue(store, id, 'development', 'ZED'), null)
        assert.deepEqual(
          (await variableMetas(store, id, 'development')).map((m) => m.name),
          ['ALPHA', 'Beta', '_mid'],
        )
        assert.deepEqual(await variableMetas(store, id, 'preview'), [])
      }),
  },
  {
    name: 'version: changes on set, delete and apply; not on read, reject or a delete of nothing',
    run: (make) =>
      withStore(make, async ({ store }) => {
        const id = await newVault(store)
        const read = async (env = 'development') => (await readLogged(store, id, env, entry(id, 'read', { environment: env }))).version
        const v0 = await read()
        assert.equal(await read(), v0, 'a read changes nothing')
        await writeTestValue(store, put(id, 'development', sv('A'), OWNER, T0), entry(id, 'variable_set'))
        const v1 = await read()
        assert.notEqual(v1, v0)
        await writeTestValue(store, put(id, 'development', sv('A'), OWNER, T0), entry(id, 'variable_set'))
        const v2 = await read()
        assert.notEqual(v2, v1, 'an overwrite changes it')
        const pv = await read('preview')
        await writeTestValue(store, put(id, 'preview', sv('P'), OWNER, T0), entry(id, 'variable_set'))
        assert.equal(await read(), v2, "another environment's change does not")
        assert.notEqual(await read('preview'), pv)
        const logged = (await store.listAccessLog(id, { limit: 1000, action: 'variable_deleted' })).length
        assert.deepEqual(
          await deleteValue(store, { vaultId: id, environment: 'development', name: 'NOPE', by: OWNER, now: T0 }, entry(id, 'variable_deleted')),
          { ok: false, reason: 'absent' },
        )
        assert.equal(await read(), v2, 'deleting nothing changes nothing')
        assert.equal((await store.listAccessLog(id, { limit: 1000, action: 'variable_deleted' })).length, logged, 'and logs nothing')
        await deleteValue(store, { vaultId: id, environment: 'development', name: 'A', by: OWNER, now: T0 }, entry(id, 'variable_deleted'))
        const v3 = await read()
        assert.notEqual(v3, v2)
        const rejected = await store.createImport(newImport(id, [sv('R')]), entry(id, 'push_created'))
        assert.ok(rejected.ok)
        await store.decideImport({ importId: rejected.value.id, decision: 'rejected', by: OWNER, now: T0 }, entry(id, 'push_rejected'))
        assert.equal(await read(), v3, 'a rejected push changes nothing')
        const applied = await store.createImport(newImport(id, [sv('R')]), entry(id, 'push_created'))
        assert.ok(applied.ok)
        assert.equal(await read(), v3, 'a pending push changes nothing')
        await store.decideImport({ importId: applied.value.id, decision: 'applied', by: OWNER, now: T0 }, entry(id, 'push_applied'))
        assert.notEqual(await read(), v3, 'an applied push changes it')
      }),
  },
  {
    name: 'a read (readCurrent, then appendAccessLog with the names read) stores its entry as given, field by field',
    run: (make) =>
      withStore(make, async ({ store }) => {
        const id = await newVault(store)
        await writeTestValue(store, put(id, 'development', sv('B'), OWNER, T0), entry(id, 'variable_set', { names: ['B'] }))
        await writeTestValue(store, put(id, 'development', sv('A'), OWNER, T0), entry(id, 'variable_set', { names: ['A'] }))
        await readLogged(store, id, 'development', entry(id, 'read', { names: ['SOMETHING_ELSE'], at: at(MINUTE) }))
        const [last] = await store.listAccessLog(id, { limit: 1 })
        assert.ok(last)
        assert.equal(last.action, 'read')
        assert.deepEqual(last.names, ['A', 'B'])
        assert.equal(last.at.getTime(), at(MINUTE).getTime())
        assert.equal(last.personId, OWNER)
        assert.equal(last.signInId, 'sign-in-1')
        assert.equal(last.clientId, 'https://envkeep.test/cli/oauth-client.json')
        assert.equal(last.environment, 'development')
        assert.equal(last.address, '127.0.0.1')
        await readLogged(store, id, 'preview', entry(id, 'read', { environment: 'preview', names: ['X'] }))
        const [empty] = await store.listAccessLog(id, { limit: 1 })
        assert.deepEqual(empty?.names, [], 'an empty read logs no names')
      }),
  },
  {
    name: 'readCurrent of chosen names: only those (that exist) are returned, in name order, and logged',
    run: (make) =>
      withStore(make, async ({ store }) => {
        const id = await newVault(store)
        const a = sv('A')
        await writeTestValue(store, put(id, 'development', a, OWNER, T0), entry(id, 'variable_set'))
        await writeTestValue(store, put(id, 'development', sv('B'), OWNER, T0), entry(id, 'variable_set'))
        await writeTestValue(store, put(id, 'development', sv('C'), OWNER, T0), entry(id, 'variable_set'))
        const r = await readLogged(store, id, 'development', entry(id, 'read'), ['C', 'A', 'NOPE'])
        assert.deepEqual(namesOf(r.variables), ['A', 'C'])
        same(r.variables[0]?.sealed, a.sealed)
        const [last] = await store.listAccessLog(id, { limit: 1 })
        assert.deepEqual(last?.names, ['A', 'C'])
        const none = await readLogged(store, id, 'development', entry(id, 'read'), ['NOPE'])
        assert.deepEqual(none.variables, [])
      }),
  },
  {
    name: 'appendAccessLog: if the entry cannot be written, it throws (the read fails) and nothing is logged',
    run: (make) =>
      withStore(make, async ({ store, probe }) => {
        const id = await newVault(store)
        await writeTestValue(store, put(id, 'development', sv('A'), OWNER, T0), entry(id, 'variable_set'))
        const before = await probe.accessLogCount(id)
        const undo = await probe.breakWrites('access_log')
        try {
          await assert.rejects(readLogged(store, id, 'development', entry(id, 'read')))
        } finally {
          await undo()
        }
        assert.equal(await probe.accessLogCount(id), before)
        const ok = await readLogged(store, id, 'development', entry(id, 'read'))
        assert.equal(ok.variables.length, 1, 'works again once the log can be written')
        assert.equal(await probe.accessLogCount(id), before + 1)
      }),
  },
  {
    name: 'a write and a delete (changeVariables) are one transaction with their log entry',
    run: (make) =>
      withStore(make, async ({ store, probe }) => {
        const id = await newVault(store)
        const first = sv('A')
        await writeTestValue(store, put(id, 'development', first, OWNER, T0), entry(id, 'variable_set'))
        const version = (await readLogged(store, id, 'development', entry(id, 'read'))).version
        const undo = await probe.breakWrites('access_log')
        try {
          await assert.rejects(writeTestValue(store, put(id, 'development', sv('A'), OWNER, T0), entry(id, 'variable_set')))
          await assert.rejects(writeTestValue(store, put(id, 'development', sv('NEW'), OWNER, T0), entry(id, 'variable_set')))
          await assert.rejects(deleteValue(store, { vaultId: id, environment: 'development', name: 'A', by: OWNER, now: T0 }, entry(id, 'variable_deleted')))
        } finally {
          await undo()
        }
        same((await storedValue(store, id, 'development', 'A'))?.sealed, first.sealed, 'not overwritten')
        assert.equal(await storedValue(store, id, 'development', 'NEW'), null, 'not inserted')
        assert.equal(await probe.variableCount(id, 'development'), 1)
        assert.equal((await readLogged(store, id, 'development', entry(id, 'read'))).version, version)
      }),
  },
  {
    name: 'a write checks the storage limit in its transaction: new names and bigger values count, pending pushes too',
    run: (make) =>
      withStore(make, async ({ store }) => {
        const id = await newVault(store)
        const limit: StorageLimit = { maxVariables: 3, maxBytes: 300 }
        const set = (name: string, n: number, env = 'development') =>
          writeTestValue(store, put(id, env, sv(name, n), OWNER, T0, { limit }), entry(id, 'variable_set', { environment: env, names: [name] }))
        assert.ok((await set('A', 100)).ok)
        assert.ok((await store.createImport(newImport(id, [sv('P', 100)]), entry(id, 'push_created'))).ok)
        assert.ok((await set('B', 100, 'preview')).ok, '300 bytes: exactly at the limit')
        const logged = (await store.listAccessLog(id, { limit: 100 })).length
        assert.deepEqual(await set('C', 1), { ok: false, reason: 'storage_limit', limit: 'variables', usage: 4, max: 3 }, 'A, B and the staged P count')
        assert.deepEqual(await set('A', 101), { ok: false, reason: 'storage_limit', limit: 'bytes', usage: 301, max: 300 }, 'an overwrite counts its growth')
        assert.equal((await store.listAccessLog(id, { limit: 100 })).length, logged, 'a refusal logs nothing')
        assert.equal(await storedValue(store, id, 'development', 'C'), null)
        assert.ok((await set('A', 60)).ok, 'a smaller value fits')
        const tooMany = await set('D', 1)
        assert.deepEqual(tooMany, { ok: false, reason: 'storage_limit', limit: 'variables', usage: 4, max: 3 })
        // a vault over a limit that shrank may still shrink
        const shrunk: StorageLimit = { maxVariables: 1, maxBytes: 50 }
        assert.ok((await writeTestValue(store, put(id, 'development', sv('A', 10), OWNER, T0, { limit: shrunk }), entry(id, 'variable_set'))).ok)
        const grow = await writeTestValue(store, put(id, 'development', sv('A', 20), OWNER, T0, { limit: shrunk }), entry(id, 'variable_set'))
        assert.equal(grow.ok, false, 'but not grow')
      }),
  },
  {
    name: 'a write into an environment that does not exist: 23503, nothing stored',
    run: (make) =>
      withStore(make, async ({ store }) => {
        const id = await newVault(store)
        await rejectsWith(writeTestValue(store, put(id, 'nowhere', sv('A'), OWNER, T0), entry(id, 'variable_set')), '23503')
        assert.deepEqual(await variableMetas(store, id, 'nowhere'), [])
      }),
  },
  {
    name: 'concurrent writes all land (each retried on `changed`, as the domain does)',
    run: (make) =>
      withStore(make, async ({ store }) => {
        const id = await newVault(store)
        const v0 = (await readLogged(store, id, 'development', entry(id, 'read'))).version
        const names = Array.from({ length: 20 }, (_, i) => `V${String(i).padStart(2, '0')}`)
        await Promise.all(names.map((n) => writeTestValue(store, put(id, 'development', sv(n), OWNER, T0), entry(id, 'variable_set'))))
        const r = await readLogged(store, id, 'development', entry(id, 'read'))
        assert.deepEqual(
          r.variables.map((v) => v.name),
          names,
        )
        assert.notEqual(r.version, v0)
      }),
  },
  {
    name: 'access log: newest first, filtered by environment, action and cursor; every field kept',
    run: (make) =>
      withStore(make, async ({ store }) => {
        const id = await newVault(store)
        const other = await newVault(store)
        await store.appendAccessLog(entry(id, 'read', { names: ['A', 'B'], at: at(1) }))
        await store.appendAccessLog(entry(id, 'refused', { environment: 'production', at: at(2) }))
        await store.appendAccessLog(entry(id, 'member_added', { environment: null, personId: null, signInId: null, clientId: null, address: null, at: at(3) }))
        await store.appendAccessLog(entry(id, 'read', { environment: 'preview', names: ['C'], at: at(4) }))
        await store.appendAccessLog(entry(other, 'read', { at: at(5) }))
        const all = await store.listAccessLog(id, { limit: 10 })
        assert.deepEqual(
          all.map((r) => r.action),
          ['read', 'member_added', 'refused', 'read', 'vault_created'],
        )
        assert.ok(all.every((r) => r.vaultId === id))
        const ids = all.map((r) => r.id)
        assert.deepEqual(
          [...ids].sort((a, b) => b - a),
          ids,
          'ids descend',
        )
        const nulls = all[1]
        assert.deepEqual(
          { ...nulls, id: 0 },
          {
            id: 0,
            vaultId: id,
            at: at(3),
            personId: null,
            signInId: null,
            clientId: null,
            action: 'member_added',
            environment: null,
            names: [],
            address: null,
            subject: null,
            detail: null,
          },
        )
        assert.deepEqual(all[3]?.names, ['A', 'B'])
        assert.deepEqual(
          (await store.listAccessLog(id, { limit: 10, environment: 'production' })).map((r) => r.action),
          ['refused'],
        )
        assert.deepEqual(
          (await store.listAccessLog(id, { limit: 10, action: 'read' })).map((r) => r.environment),
          ['preview', 'development'],
        )
        assert.equal((await store.listAccessLog(id, { limit: 2 })).length, 2)
        const page2 = await store.listAccessLog(id, { limit: 10, before: ids[1] as number })
        assert.deepEqual(
          page2.map((r) => r.id),
          ids.slice(2),
        )
        assert.deepEqual(await store.listAccessLog(randomUUID(), { limit: 10 }), [])
      }),
  },
]

// The vault store contract, part: vaults, members, environments, keys.
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import type { Role, VaultSecrets } from '../../adapters/vault-store.js'
import { ACCESS_ACTIONS } from '../../domain/access-log-actions.js'
import type { VaultStoreContractCase } from './types.js'
import {
  T0,
  OWNER,
  EDITOR,
  STRANGER,
  ENVS,
  sealed,
  sv,
  entry,
  put,
  withStore,
  getVault,
  newVault,
  newImport,
  same,
  rejectsWith,
  storedValue,
  stagedValues,
  readLogged,
} from './fixtures.js'
import { storeFirstKey } from '../keys.js'
import { writeTestValue } from '../write-value.js'

const DONE = { ok: true, value: undefined }
const CHANGED = { ok: false, reason: 'changed' }

export const vaultCases: readonly VaultStoreContractCase[] = [
  {
    name: 'createVault: the owner sees it with its environments in name order; others see nothing',
    run: (make) =>
      withStore(make, async ({ store }) => {
        const id = randomUUID()
        const rec = await store.createVault(
          { id, name: 'acme', ownerId: OWNER, plan: 'self-hosted', environments: ENVS, now: T0 },
          entry(id, 'vault_created', { environment: null }),
        )
        assert.deepEqual(rec, { ok: true, value: { id, name: 'acme', plan: 'self-hosted', requireSecondPerson: false, createdAt: T0 } })
        const v = await getVault(store, id, OWNER)
        assert.ok(v)
        assert.equal(v.role, 'owner')
        assert.equal(v.name, 'acme')
        assert.equal(v.plan, 'self-hosted')
        assert.equal(v.requireSecondPerson, false)
        assert.equal(v.createdAt.getTime(), T0.getTime())
        assert.deepEqual(
          v.environments,
          [
            { name: 'development', ownersOnly: false, secondPerson: false },
            { name: 'preview', ownersOnly: false, secondPerson: false },
            { name: 'production', ownersOnly: true, secondPerson: true },
          ],
          'secondPerson defaults to ownersOnly',
        )
        assert.equal(await getVault(store, id, STRANGER), null)
        assert.equal(await getVault(store, randomUUID(), OWNER), null)
        assert.deepEqual(await store.listVaults(STRANGER), [])
        assert.deepEqual(await store.listMembers(id), [{ personId: OWNER, role: 'owner' }])
      }),
  },
  {
    name: 'createVault is one transaction: a failing environment leaves no vault, member or environment',
    run: (make) =>
      withStore(make, async ({ store }) => {
        const id = randomUUID()
        const dup = [
          { name: 'development', ownersOnly: false },
          { name: 'development', ownersOnly: true },
        ]
        await rejectsWith(
          store.createVault(
            { id, name: 'half', ownerId: OWNER, plan: 'self-hosted', environments: dup, now: T0 },
            entry(id, 'vault_created', { environment: null }),
          ),
          '23505',
        )
        assert.equal(await getVault(store, id, OWNER), null)
        assert.deepEqual(await store.listVaults(OWNER), [])
        assert.deepEqual(await store.listMembers(id), [])
        assert.equal(await store.getWrappedKey(id), null)
        // the id is free again
        await store.createVault(
          { id, name: 'whole', ownerId: OWNER, plan: 'self-hosted', environments: ENVS, now: T0 },
          entry(id, 'vault_created', { environment: null }),
        )
        assert.equal((await getVault(store, id, OWNER))?.name, 'whole')
      }),
  },
  {
    name: 'createVault with an existing id: 23505, the first vault unchanged, no row value in the error',
    run: (make) =>
      withStore(make, async ({ store }) => {
        const id = await newVault(store, { name: 'first' })
        const canary = `CANARY-${randomUUID()}`
        const e = await rejectsWith(
          store.createVault(
            { id, name: canary, ownerId: STRANGER, plan: canary, environments: [], now: T0 },
            entry(id, 'vault_created', { environment: null }),
          ),
          '23505',
        )
        assert.ok(!e.message.includes(canary), 'the error does not repeat the row')
        assert.ok(!String((e as { detail?: unknown }).detail ?? '').includes(canary))
        assert.ok(!e.message.includes(id), 'nor its id')
        assert.equal((await getVault(store, id, OWNER))?.name, 'first')
        assert.equal(await getVault(store, id, STRANGER), null)
      }),
  },
  {
    name: "listVaults: the person's vaults only, in name order, with their role; findVaults by exact name",
    run: (make) =>
      withStore(make, async ({ store }) => {
        const b = await newVault(store, { name: 'bravo' })
        const a = await newVault(store, { name: 'alpha' })
        const c = await newVault(store, { name: 'charlie' })
        const a2 = await newVault(store, { name: 'alpha' })
        await store.changeMember(
          { kind: 'set', vaultId: b, personId: EDITOR, role: 'editor' },
          entry(b, 'member_added', { environment: null, subject: EDITOR, detail: 'editor' }),
        )
        await store.changeMember(
          { kind: 'set', vaultId: a, personId: EDITOR, role: 'viewer' },
          entry(a, 'member_added', { environment: null, subject: EDITOR, detail: 'viewer' }),
        )
        const mine = await store.listVaults(OWNER)
        assert.deepEqual(
          mine.map((v) => v.name),
          ['alpha', 'alpha', 'bravo', 'charlie'],
        )
        assert.ok(mine.every((v) => v.role === 'owner' && v.environments.length === 3))
        const theirs = await store.listVaults(EDITOR)
        assert.deepEqual(
          theirs.map((v) => [v.id, v.role]),
          [
            [a, 'viewer'],
            [b, 'editor'],
          ],
        )
        assert.deepEqual(
          (await store.findVaults({ name: 'alpha' })).map((v) => v.id),
          [a, a2].sort(),
        )
        assert.deepEqual(await store.findVaults({ name: 'ALPHA' }), [], 'exact name')
        assert.ok(c)
      }),
  },
  {
    name: 'members: set, change, list, remove',
    run: (make) =>
      withStore(make, async ({ store }) => {
        const id = await newVault(store)
        await store.changeMember(
          { kind: 'set', vaultId: id, personId: EDITOR, role: 'viewer' },
          entry(id, 'member_added', { environment: null, subject: EDITOR, detail: 'viewer' }),
        )
        assert.equal((await getVault(store, id, EDITOR))?.role, 'viewer')
        await store.changeMember(
          { kind: 'set', vaultId: id, personId: EDITOR, role: 'editor' },
          entry(id, 'member_added', { environment: null, subject: EDITOR, detail: 'editor' }),
        )
        assert.equal((await getVault(store, id, EDITOR))?.role, 'editor')
        const members = await store.listMembers(id)
        assert.equal(members.length, 2)
        assert.deepEqual(
          [...members].sort((x, y) => (x.personId < y.personId ? -1 : 1)),
          [
            { personId: EDITOR, role: 'editor' },
            { personId: OWNER, role: 'owner' },
          ],
        )
        assert.deepEqual(
          await store.changeMember({ kind: 'remove', vaultId: id, personId: EDITOR }, entry(id, 'member_removed', { environment: null, subject: EDITOR })),
          {
            ok: true,
            value: 'editor',
          },
        )
        assert.deepEqual(
          await store.changeMember({ kind: 'remove', vaultId: id, personId: EDITOR }, entry(id, 'member_removed', { environment: null, subject: EDITOR })),
          {
            ok: false,
            reason: 'not_member',
          },
        )
        assert.equal(await getVault(store, id, EDITOR), null)
        assert.deepEqual(await store.listMembers(id), [{ personId: OWNER, role: 'owner' }])
      }),
  },
  {
    name: 'createVault logs vault_created in the same transaction; findVaults finds any vault by id or name, for the administrator',
    run: (make) =>
      withStore(make, async ({ store }) => {
        const id = randomUUID()
        await store.createVault(
          { id, name: 'acme', ownerId: OWNER, plan: 'self-hosted', environments: ENVS, now: T0 },
          entry(id, 'vault_created', { environment: null, personId: null, signInId: null, clientId: 'envkeep-server', address: null }),
        )
        const [log] = await store.listAccessLog(id, { limit: 10 })
        assert.equal(log?.action, 'vault_created')
        assert.equal(log?.personId, null)
        assert.equal(log?.clientId, 'envkeep-server')
        const twin = await newVault(store, { name: 'acme' })
        await newVault(store, { name: 'other' })
        const byId = await store.findVaults({ id })
        assert.equal(byId.length, 1)
        assert.deepEqual(byId[0], {
          id,
          name: 'acme',
          plan: 'self-hosted',
          requireSecondPerson: false,
          createdAt: T0,
          environments: [
            { name: 'development', ownersOnly: false, secondPerson: false },
            { name: 'preview', ownersOnly: false, secondPerson: false },
            { name: 'production', ownersOnly: true, secondPerson: true },
          ],
        })
        assert.deepEqual(
          (await store.findVaults({ name: 'acme' })).map((v) => v.id),
          [id, twin].sort(),
        )
        assert.deepEqual(await store.findVaults({ name: 'ACME' }), [], 'exact name')
        assert.deepEqual(await store.findVaults({ id: randomUUID() }), [])
      }),
  },
  {
    name: 'changeMember set: expect new/existing, added vs changed in the log with whom and which role, same role writes nothing',
    run: (make) =>
      withStore(make, async ({ store }) => {
        const id = await newVault(store)
        const log = (role: string) => entry(id, 'member_changed', { environment: null, subject: EDITOR, detail: role })
        assert.deepEqual(await store.changeMember({ kind: 'set', vaultId: id, personId: EDITOR, role: 'viewer', expect: 'existing' }, log('viewer')), {
          ok: false,
          reason: 'not_member',
        })
        assert.deepEqual(await store.changeMember({ kind: 'set', vaultId: id, personId: EDITOR, role: 'viewer', expect: 'new' }, log('viewer')), {
          ok: true,
          value: null,
        })
        assert.deepEqual(await store.changeMember({ kind: 'set', vaultId: id, personId: EDITOR, role: 'editor', expect: 'new' }, log('editor')), {
          ok: false,
          reason: 'already_member',
        })
        assert.deepEqual(await store.changeMember({ kind: 'set', vaultId: id, personId: EDITOR, role: 'editor', expect: 'existing' }, log('editor')), {
          ok: true,
          value: 'viewer',
        })
        assert.deepEqual(await store.changeMember({ kind: 'set', vaultId: id, personId: EDITOR, role: 'editor' }, log('editor')), { ok: true, value: 'editor' })
        const rows = await store.listAccessLog(id, { limit: 10 })
        assert.deepEqual(
          rows.filter((r) => r.action.startsWith('member_')).map((r) => [r.action, r.subject, r.detail]),
          [
            ['member_changed', EDITOR, 'editor'],
            ['member_added', EDITOR, 'viewer'],
          ],
          'storage names the action by what happened; refusals and no-ops log nothing',
        )
        assert.deepEqual(await store.changeMember({ kind: 'set', vaultId: randomUUID(), personId: EDITOR, role: 'editor' }, log('editor')), {
          ok: false,
          reason: 'not_found',
        })
      }),
  },
  {
    name: 'the last owner: cannot be demoted or removed; another owner can',
    run: (make) =>
      withStore(make, async ({ store }) => {
        const id = await newVault(store)
        const change = (personId: string, role: Role) =>
          store.changeMember({ kind: 'set', vaultId: id, personId, role }, entry(id, 'member_changed', { environment: null, subject: personId, detail: role }))
        const remove = (personId: string) =>
          store.changeMember({ kind: 'remove', vaultId: id, personId }, entry(id, 'member_removed', { environment: null, subject: personId }))
        const logged = async () => (await store.listAccessLog(id, { limit: 100 })).length
        const before = await logged()
        assert.deepEqual(await change(OWNER, 'viewer'), { ok: false, reason: 'last_owner' })
        assert.deepEqual(await remove(OWNER), { ok: false, reason: 'last_owner' })
        assert.equal(await logged(), before, 'refusals log nothing')
        assert.deepEqual(await store.listMembers(id), [{ personId: OWNER, role: 'owner' }])
        assert.deepEqual(await change(EDITOR, 'owner'), { ok: true, value: null })
        assert.deepEqual(await change(OWNER, 'editor'), { ok: true, value: 'owner' })
        assert.deepEqual(await remove(EDITOR), { ok: false, reason: 'last_owner' }, 'now EDITOR is the last owner')
        assert.deepEqual(await change(OWNER, 'owner'), { ok: true, value: 'editor' })
        assert.deepEqual(await remove(EDITOR), { ok: true, value: 'owner' })
        assert.deepEqual(await store.listMembers(id), [{ personId: OWNER, role: 'owner' }])
      }),
  },
  {
    name: 'the last owner under concurrency: two owners demoting or removing each other at once leave one owner (50 rounds)',
    run: (make) =>
      withStore(make, async ({ store }) => {
        for (let round = 0; round < 50; round++) {
          const id = await newVault(store)
          const log = (subject: string) => entry(id, 'member_changed', { environment: null, subject })
          await store.changeMember({ kind: 'set', vaultId: id, personId: EDITOR, role: 'owner' }, log(EDITOR))
          const results =
            round % 2 === 0
              ? await Promise.all([
                  store.changeMember({ kind: 'set', vaultId: id, personId: OWNER, role: 'viewer' }, log(OWNER)),
                  store.changeMember({ kind: 'set', vaultId: id, personId: EDITOR, role: 'editor' }, log(EDITOR)),
                ])
              : await Promise.all([
                  store.changeMember({ kind: 'remove', vaultId: id, personId: OWNER }, log(OWNER)),
                  store.changeMember({ kind: 'remove', vaultId: id, personId: EDITOR }, log(EDITOR)),
                ])
          assert.equal(results.filter((r) => r.ok).length, 1, `round ${round}: exactly one wins`)
          assert.deepEqual(
            results.filter((r) => !r.ok),
            [{ ok: false, reason: 'last_owner' }],
            `round ${round}`,
          )
          const owners = (await store.listMembers(id)).filter((m) => m.role === 'owner')
          assert.equal(owners.length, 1, `round ${round}: one owner left`)
        }
      }),
  },
  {
    name: 'changeVault create_environment: appears in name order and is logged; an existing name is refused as exists',
    run: (make) =>
      withStore(make, async ({ store }) => {
        const id = await newVault(store)
        assert.deepEqual(
          await store.changeVault({ kind: 'create_environment', vaultId: id, name: 'qa', ownersOnly: true, now: T0 }, entry(id, 'environment_created')),
          { ok: true, value: undefined },
        )
        const v = await getVault(store, id, OWNER)
        assert.deepEqual(
          v?.environments.map((e) => [e.name, e.ownersOnly]),
          [
            ['development', false],
            ['preview', false],
            ['production', true],
            ['qa', true],
          ],
        )
        assert.deepEqual(
          await store.changeVault({ kind: 'create_environment', vaultId: id, name: 'qa', ownersOnly: false, now: T0 }, entry(id, 'environment_created')),
          {
            ok: false,
            reason: 'exists',
          },
        )
        assert.equal((await getVault(store, id, OWNER))?.environments.length, 4)
        assert.equal((await store.listAccessLog(id, { limit: 10, action: 'environment_created' })).length, 1, 'logged once')
        assert.deepEqual(
          await store.changeVault(
            { kind: 'create_environment', vaultId: randomUUID(), name: 'qa', ownersOnly: false, now: T0 },
            entry(id, 'environment_created'),
          ),
          { ok: false, reason: 'not_found' },
        )
      }),
  },
  {
    name: 'swapWrappedKey key: none at first; the first key is stored once; a swap expecting a key that moved is refused as changed',
    run: (make) =>
      withStore(make, async ({ store }) => {
        const id = await newVault(store)
        assert.equal(await store.getWrappedKey(id), null)
        assert.equal(await store.getWrappedKey(randomUUID()), null)
        const k1 = sealed(60)
        const k2 = sealed(60)
        assert.deepEqual(await store.swapWrappedKey({ kind: 'key', vaultId: id, expect: null, next: k1 }), DONE)
        assert.deepEqual(await store.swapWrappedKey({ kind: 'key', vaultId: id, expect: null, next: k2 }), CHANGED, 'the existing key wins')
        same(await store.getWrappedKey(id), k1)
        // two racing writers: one stores its key, the other is told and reads it
        const other = await newVault(store)
        const raced = await Promise.all([
          store.swapWrappedKey({ kind: 'key', vaultId: other, expect: null, next: k1 }),
          store.swapWrappedKey({ kind: 'key', vaultId: other, expect: null, next: k2 }),
        ])
        assert.deepEqual(
          raced.map((r) => r.ok),
          raced[0]?.ok ? [true, false] : [false, true],
          'exactly one wins',
        )
        same(await store.getWrappedKey(other), raced[0]?.ok ? k1 : k2)
        // a rewrap expects the key it read
        const k3 = sealed(60)
        assert.deepEqual(await store.swapWrappedKey({ kind: 'key', vaultId: id, expect: k2, next: k3 }), CHANGED)
        same(await store.getWrappedKey(id), k1, 'nothing written')
        assert.deepEqual(await store.swapWrappedKey({ kind: 'key', vaultId: id, expect: k1, next: k3 }), DONE)
        same(await store.getWrappedKey(id), k3)
        assert.deepEqual(await store.swapWrappedKey({ kind: 'key', vaultId: randomUUID(), expect: null, next: k1 }), { ok: false, reason: 'not_found' })
      }),
  },
  {
    name: 'swapWrappedKey reseal: the key and every sealed value (variables, staged values of pending pushes) replaced in one transaction',
    run: (make) =>
      withStore(make, async ({ store }) => {
        const id = await newVault(store)
        assert.equal(await store.readVaultSecrets(id), null, 'no key yet: nothing to reseal')
        const key = sealed(60)
        await storeFirstKey(store, id, key)
        await writeTestValue(store, put(id, 'development', sv('A'), OWNER, T0), entry(id, 'variable_set'))
        await writeTestValue(store, put(id, 'production', sv('B'), OWNER, T0), entry(id, 'variable_set'))
        const pending = newImport(id, [sv('P')])
        assert.ok((await store.createImport(pending, entry(id, 'push_created'))).ok)
        const decided = newImport(id, [sv('Q')])
        assert.ok((await store.createImport(decided, entry(id, 'push_created'))).ok)
        await store.decideImport({ importId: decided.id, decision: 'rejected', by: OWNER, now: T0 }, entry(id, 'push_rejected'))
        const other = await newVault(store)
        await storeFirstKey(store, other, sealed(60))
        await writeTestValue(store, put(other, 'development', sv('Z'), OWNER, T0), entry(other, 'variable_set'))
        const otherBefore = await storedValue(store, other, 'development', 'Z')
        const version = (await readLogged(store, id, 'development', entry(id, 'read'))).version

        const bump = (u: Uint8Array) => new Uint8Array([...u, 1])
        const got = await store.readVaultSecrets(id)
        assert.ok(got)
        const next: VaultSecrets = {
          wrappedKey: bump(got.wrappedKey),
          variables: got.variables.map((v) => ({ ...v, sealed: bump(v.sealed) })),
          staged: got.staged.map((v) => ({ ...v, sealed: bump(v.sealed) })),
          history: got.history.map((v) => ({ ...v, sealed: bump(v.sealed) })),
        }
        // a row that is not there: 23503, nothing changes
        await rejectsWith(
          store.swapWrappedKey({
            kind: 'reseal',
            vaultId: id,
            expect: got,
            next: { ...next, variables: [...next.variables, { environment: 'development', name: 'NOPE', sealed: sealed() }] },
          }),
          '23503',
        )
        same(await store.getWrappedKey(id), key)
        same(got.wrappedKey, key)
        assert.deepEqual(got.variables.map((v) => `${v.environment}/${v.name}`).sort(), ['development/A', 'production/B'])
        assert.deepEqual(
          got.staged.map((v) => `${v.importId}/${v.environment}/${v.name}`),
          [`${pending.id}/development/P`],
          'pending pushes only',
        )
        assert.deepEqual(await store.swapWrappedKey({ kind: 'reseal', vaultId: id, expect: got, next }), DONE)
        same(await store.getWrappedKey(id), bump(key))
        for (const v of got.variables) same((await storedValue(store, id, v.environment, v.name))?.sealed, bump(v.sealed), v.name)
        same((await stagedValues(store, pending.id))[0]?.sealed, bump(got.staged[0]!.sealed))
        assert.notEqual((await readLogged(store, id, 'development', entry(id, 'read'))).version, version, 'the version changes')
        same((await storedValue(store, other, 'development', 'Z'))?.sealed, otherBefore?.sealed, 'other vaults untouched')
        assert.deepEqual(await store.swapWrappedKey({ kind: 'reseal', vaultId: id, expect: got, next }), CHANGED, 'the secrets it expected are gone')
        assert.deepEqual(await store.swapWrappedKey({ kind: 'reseal', vaultId: randomUUID(), expect: got, next }), { ok: false, reason: 'not_found' })
      }),
  },
  {
    name: 'swapWrappedKey reseal is refused as changed when a value was written or a push created since the read; nothing written',
    run: (make) =>
      withStore(make, async ({ store }) => {
        const id = await newVault(store)
        const key = await storeFirstKey(store, id, sealed(60))
        await writeTestValue(store, put(id, 'development', sv('A'), OWNER, T0), entry(id, 'variable_set'))
        const reseal = (c: VaultSecrets): VaultSecrets => ({
          wrappedKey: sealed(60),
          variables: c.variables.map((v) => ({ ...v, sealed: sealed() })),
          staged: c.staged.map((v) => ({ ...v, sealed: sealed() })),
          history: c.history.map((v) => ({ ...v, sealed: sealed() })),
        })
        const read1 = await store.readVaultSecrets(id)
        assert.ok(read1)
        const written = await storedValue(store, id, 'development', 'A')
        await writeTestValue(store, put(id, 'development', sv('A'), OWNER, T0), entry(id, 'variable_set')) // a writer, meanwhile
        const now = await storedValue(store, id, 'development', 'A')
        assert.deepEqual(await store.swapWrappedKey({ kind: 'reseal', vaultId: id, expect: read1, next: reseal(read1) }), CHANGED)
        same(await store.getWrappedKey(id), key, 'the key stays')
        same((await storedValue(store, id, 'development', 'A'))?.sealed, now?.sealed, 'the value stays')
        assert.ok(written)
        const read2 = await store.readVaultSecrets(id)
        assert.ok(read2)
        assert.ok((await store.createImport(newImport(id, [sv('P')]), entry(id, 'push_created'))).ok) // a push, meanwhile
        assert.deepEqual(await store.swapWrappedKey({ kind: 'reseal', vaultId: id, expect: read2, next: reseal(read2) }), CHANGED)
        same(await store.getWrappedKey(id), key)
        const read3 = await store.readVaultSecrets(id)
        assert.ok(read3)
        assert.deepEqual(await store.swapWrappedKey({ kind: 'reseal', vaultId: id, expect: read3, next: reseal(read3) }), DONE, 'read again, it goes through')
      }),
  },
  {
    name: 'access log: every action of ACCESS_ACTIONS is stored and read back, and filtered on',
    run: (make) =>
      withStore(make, async ({ store }) => {
        const id = await newVault(store)
        for (const action of ACCESS_ACTIONS) await store.appendAccessLog(entry(id, action, { environment: null }))
        const rows = await store.listAccessLog(id, { limit: 100 })
        assert.deepEqual(
          rows.map((r) => r.action).filter((a) => a !== 'vault_created'),
          ACCESS_ACTIONS.filter((a) => a !== 'vault_created').reverse(),
        )
        for (const action of ACCESS_ACTIONS) {
          assert.ok(
            (await store.listAccessLog(id, { action, limit: 100 })).every((r) => r.action === action),
            action,
          )
        }
      }),
  },
]

// The vault store contract, part: vaults, members, environments, keys.
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import type { Role, VaultSecrets } from '../../adapters/vault-store.js'
import { ACCESS_ACTIONS } from '../../domain/access-log-actions.js'
import type { VaultStoreContractCase } from '../vault-store-contract.js'
import {
  signalled,
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
  newVault,
  newImport,
  same,
  rejectsWith,
  storedValue,
  stagedValues,
  readLogged,
} from './fixtures.js'
import { writeTestValue } from '../write-value.js'

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
        assert.deepEqual(rec, { id, name: 'acme', plan: 'self-hosted', requireSecondPerson: false, createdAt: T0 })
        const v = await store.getVault(id, OWNER)
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
        assert.equal(await store.getVault(id, STRANGER), null)
        assert.equal(await store.getVault(randomUUID(), OWNER), null)
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
        assert.equal(await store.getVault(id, OWNER), null)
        assert.deepEqual(await store.listVaults(OWNER), [])
        assert.deepEqual(await store.listMembers(id), [])
        assert.equal(await store.getWrappedKey(id), null)
        // the id is free again
        await store.createVault(
          { id, name: 'whole', ownerId: OWNER, plan: 'self-hosted', environments: ENVS, now: T0 },
          entry(id, 'vault_created', { environment: null }),
        )
        assert.equal((await store.getVault(id, OWNER))?.name, 'whole')
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
        assert.equal((await store.getVault(id, OWNER))?.name, 'first')
        assert.equal(await store.getVault(id, STRANGER), null)
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
        await store.setMember(
          { vaultId: b, personId: EDITOR, role: 'editor' },
          entry(b, 'member_added', { environment: null, subject: EDITOR, detail: 'editor' }),
        )
        await store.setMember(
          { vaultId: a, personId: EDITOR, role: 'viewer' },
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
        await store.setMember(
          { vaultId: id, personId: EDITOR, role: 'viewer' },
          entry(id, 'member_added', { environment: null, subject: EDITOR, detail: 'viewer' }),
        )
        assert.equal((await store.getVault(id, EDITOR))?.role, 'viewer')
        await store.setMember(
          { vaultId: id, personId: EDITOR, role: 'editor' },
          entry(id, 'member_added', { environment: null, subject: EDITOR, detail: 'editor' }),
        )
        assert.equal((await store.getVault(id, EDITOR))?.role, 'editor')
        const members = await store.listMembers(id)
        assert.equal(members.length, 2)
        assert.deepEqual(
          [...members].sort((x, y) => (x.personId < y.personId ? -1 : 1)),
          [
            { personId: EDITOR, role: 'editor' },
            { personId: OWNER, role: 'owner' },
          ],
        )
        assert.deepEqual(await store.removeMember({ vaultId: id, personId: EDITOR }, entry(id, 'member_removed', { environment: null, subject: EDITOR })), {
          ok: true,
          previous: 'editor',
        })
        assert.deepEqual(await store.removeMember({ vaultId: id, personId: EDITOR }, entry(id, 'member_removed', { environment: null, subject: EDITOR })), {
          ok: false,
          reason: 'not_member',
        })
        assert.equal(await store.getVault(id, EDITOR), null)
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
    name: 'setMember: expect new/existing, added vs changed in the log with whom and which role, same role writes nothing',
    run: (make) =>
      withStore(make, async ({ store }) => {
        const id = await newVault(store)
        const log = (role: string) => entry(id, 'member_changed', { environment: null, subject: EDITOR, detail: role })
        assert.deepEqual(await store.setMember({ vaultId: id, personId: EDITOR, role: 'viewer', expect: 'existing' }, log('viewer')), {
          ok: false,
          reason: 'not_member',
        })
        assert.deepEqual(await store.setMember({ vaultId: id, personId: EDITOR, role: 'viewer', expect: 'new' }, log('viewer')), {
          ok: true,
          previous: null,
        })
        assert.deepEqual(await store.setMember({ vaultId: id, personId: EDITOR, role: 'editor', expect: 'new' }, log('editor')), {
          ok: false,
          reason: 'already_member',
        })
        assert.deepEqual(await store.setMember({ vaultId: id, personId: EDITOR, role: 'editor', expect: 'existing' }, log('editor')), {
          ok: true,
          previous: 'viewer',
        })
        assert.deepEqual(await store.setMember({ vaultId: id, personId: EDITOR, role: 'editor' }, log('editor')), { ok: true, previous: 'editor' })
        const rows = await store.listAccessLog(id, { limit: 10 })
        assert.deepEqual(
          rows.filter((r) => r.action.startsWith('member_')).map((r) => [r.action, r.subject, r.detail]),
          [
            ['member_changed', EDITOR, 'editor'],
            ['member_added', EDITOR, 'viewer'],
          ],
          'storage names the action by what happened; refusals and no-ops log nothing',
        )
        await rejectsWith(store.setMember({ vaultId: randomUUID(), personId: EDITOR, role: 'editor' }, log('editor')), '23503')
      }),
  },
  {
    name: 'the last owner: cannot be demoted or removed; another owner can',
    run: (make) =>
      withStore(make, async ({ store }) => {
        const id = await newVault(store)
        const change = (personId: string, role: Role) =>
          store.setMember({ vaultId: id, personId, role }, entry(id, 'member_changed', { environment: null, subject: personId, detail: role }))
        const remove = (personId: string) =>
          store.removeMember({ vaultId: id, personId }, entry(id, 'member_removed', { environment: null, subject: personId }))
        const logged = async () => (await store.listAccessLog(id, { limit: 100 })).length
        const before = await logged()
        assert.deepEqual(await change(OWNER, 'viewer'), { ok: false, reason: 'last_owner' })
        assert.deepEqual(await remove(OWNER), { ok: false, reason: 'last_owner' })
        assert.equal(await logged(), before, 'refusals log nothing')
        assert.deepEqual(await store.listMembers(id), [{ personId: OWNER, role: 'owner' }])
        assert.deepEqual(await change(EDITOR, 'owner'), { ok: true, previous: null })
        assert.deepEqual(await change(OWNER, 'editor'), { ok: true, previous: 'owner' })
        assert.deepEqual(await remove(EDITOR), { ok: false, reason: 'last_owner' }, 'now EDITOR is the last owner')
        assert.deepEqual(await change(OWNER, 'owner'), { ok: true, previous: 'editor' })
        assert.deepEqual(await remove(EDITOR), { ok: true, previous: 'owner' })
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
          await store.setMember({ vaultId: id, personId: EDITOR, role: 'owner' }, log(EDITOR))
          const results =
            round % 2 === 0
              ? await Promise.all([
                  store.setMember({ vaultId: id, personId: OWNER, role: 'viewer' }, log(OWNER)),
                  store.setMember({ vaultId: id, personId: EDITOR, role: 'editor' }, log(EDITOR)),
                ])
              : await Promise.all([
                  store.removeMember({ vaultId: id, personId: OWNER }, log(OWNER)),
                  store.removeMember({ vaultId: id, personId: EDITOR }, log(EDITOR)),
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
    name: 'createEnvironment: appears in name order and is logged; an existing name is refused as exists',
    run: (make) =>
      withStore(make, async ({ store }) => {
        const id = await newVault(store)
        assert.deepEqual(await store.createEnvironment({ vaultId: id, name: 'qa', ownersOnly: true, now: T0 }, entry(id, 'environment_created')), { ok: true })
        const v = await store.getVault(id, OWNER)
        assert.deepEqual(
          v?.environments.map((e) => [e.name, e.ownersOnly]),
          [
            ['development', false],
            ['preview', false],
            ['production', true],
            ['qa', true],
          ],
        )
        assert.deepEqual(await store.createEnvironment({ vaultId: id, name: 'qa', ownersOnly: false, now: T0 }, entry(id, 'environment_created')), {
          ok: false,
          reason: 'exists',
        })
        assert.equal((await store.getVault(id, OWNER))?.environments.length, 4)
        assert.equal((await store.listAccessLog(id, { limit: 10, action: 'environment_created' })).length, 1, 'logged once')
        await rejectsWith(store.createEnvironment({ vaultId: randomUUID(), name: 'qa', ownersOnly: false, now: T0 }, entry(id, 'environment_created')), '23503')
      }),
  },
  {
    name: 'wrapped keys: none at first; ensureWrappedKey wraps once, for the first writer only',
    run: (make) =>
      withStore(make, async ({ store }) => {
        const id = await newVault(store)
        assert.equal(await store.getWrappedKey(id), null)
        assert.equal(await store.getWrappedKey(randomUUID()), null)
        const k1 = sealed(60)
        const k2 = sealed(60)
        let calls = 0
        const wrapAs = (k: Uint8Array) => async () => {
          calls++
          return k
        }
        same(await store.ensureWrappedKey(id, wrapAs(k1)), k1)
        same(await store.ensureWrappedKey(id, wrapAs(k2)), k1, 'the existing key wins')
        assert.equal(calls, 1, 'no wrapping when there is a key')
        same(await store.getWrappedKey(id), k1)
        // two racing writers agree on one key, and only one wraps
        const other = await newVault(store)
        calls = 0
        const [x, y] = await Promise.all([store.ensureWrappedKey(other, wrapAs(k1)), store.ensureWrappedKey(other, wrapAs(k2))])
        same(x, y, 'both writers get the same key')
        same(await store.getWrappedKey(other), x)
        assert.equal(calls, 1)
        // a failing wrap stores nothing
        const third = await newVault(store)
        await assert.rejects(store.ensureWrappedKey(third, async () => Promise.reject(new Error('keyring refused'))))
        assert.equal(await store.getWrappedKey(third), null)
        await rejectsWith(store.ensureWrappedKey(randomUUID(), wrapAs(k1)), '23503')
      }),
  },
  {
    name: 'ensureWrappedKey wraps inside its transaction: a rotation waits, then rewraps the new key too',
    run: (make) =>
      withStore(make, async ({ store, probe }) => {
        const id = await newVault(store)
        const k = sealed(60)
        let release!: () => void
        const gate = new Promise<void>((resolve) => (release = resolve))
        let wrapping!: () => void
        const started = new Promise<void>((resolve) => (wrapping = resolve))
        const ensured = store.ensureWrappedKey(id, async () => {
          wrapping()
          await gate // the keyring is slow (a KMS, say)
          return k
        })
        await started
        const rotated = store.rewrapKeys(async (w) => new Uint8Array([...w, 9]))
        // the store's signal: the rotation is waiting for the lock the wrapping holds
        await signalled(async () => (await probe.lockWaiters()) > 0, 'the rotation waits for the key being made')
        release()
        same(await ensured, k)
        assert.equal(await rotated, 1, 'the rotation ran after the key was stored, and rewrapped it')
        same(await store.getWrappedKey(id), new Uint8Array([...k, 9]))
      }),
  },
  {
    name: 'rewrapKeys: replaces every key in one transaction; a failing rewrap changes none',
    run: (make) =>
      withStore(make, async ({ store }) => {
        const a = await newVault(store)
        const b = await newVault(store)
        const none = await newVault(store)
        const ka = sealed(60)
        const kb = sealed(60)
        await store.ensureWrappedKey(a, async () => ka)
        await store.ensureWrappedKey(b, async () => kb)
        let calls = 0
        await assert.rejects(
          store.rewrapKeys(async (w) => {
            if (++calls === 2) throw new Error('keyring refused')
            return new Uint8Array([...w, 1])
          }),
        )
        same(await store.getWrappedKey(a), ka, 'first key rolled back')
        same(await store.getWrappedKey(b), kb)
        const seen: string[] = []
        const n = await store.rewrapKeys(async (w, vaultId) => {
          seen.push(vaultId)
          return new Uint8Array([...w, 7])
        })
        assert.equal(n, 2)
        assert.deepEqual(seen.sort(), [a, b].sort())
        same(await store.getWrappedKey(a), new Uint8Array([...ka, 7]))
        same(await store.getWrappedKey(b), new Uint8Array([...kb, 7]))
        assert.equal(await store.getWrappedKey(none), null)
      }),
  },
  {
    name: 'resealVault: the key and every sealed value (variables, staged values of pending pushes) replaced in one transaction',
    run: (make) =>
      withStore(make, async ({ store }) => {
        const id = await newVault(store)
        assert.equal(await store.resealVault(id, async (c) => c), false, 'no key yet: nothing to reseal')
        const key = sealed(60)
        await store.ensureWrappedKey(id, async () => key)
        await writeTestValue(store, put(id, 'development', sv('A'), OWNER, T0), entry(id, 'variable_set'))
        await writeTestValue(store, put(id, 'production', sv('B'), OWNER, T0), entry(id, 'variable_set'))
        const pending = newImport(id, [sv('P')])
        assert.ok((await store.createImport(pending, entry(id, 'push_created'))).ok)
        const decided = newImport(id, [sv('Q')])
        assert.ok((await store.createImport(decided, entry(id, 'push_created'))).ok)
        await store.decideImport({ importId: decided.id, decision: 'rejected', by: OWNER, now: T0 }, entry(id, 'push_rejected'))
        const other = await newVault(store)
        await store.ensureWrappedKey(other, async () => sealed(60))
        await writeTestValue(store, put(other, 'development', sv('Z'), OWNER, T0), entry(other, 'variable_set'))
        const otherBefore = await storedValue(store, other, 'development', 'Z')
        const version = (await readLogged(store, id, 'development', entry(id, 'read'))).version

        const bump = (u: Uint8Array) => new Uint8Array([...u, 1])
        // a throw changes nothing
        await assert.rejects(store.resealVault(id, async () => Promise.reject(new Error('a value did not open'))))
        same(await store.getWrappedKey(id), key)
        let seen: VaultSecrets | null = null
        assert.equal(
          await store.resealVault(id, async (c) => {
            seen = c
            return {
              wrappedKey: bump(c.wrappedKey),
              variables: c.variables.map((v) => ({ ...v, sealed: bump(v.sealed) })),
              staged: c.staged.map((v) => ({ ...v, sealed: bump(v.sealed) })),
              history: c.history.map((v) => ({ ...v, sealed: bump(v.sealed) })),
            }
          }),
          true,
        )
        const got = seen as VaultSecrets | null
        assert.ok(got)
        same(got.wrappedKey, key)
        assert.deepEqual(got.variables.map((v) => `${v.environment}/${v.name}`).sort(), ['development/A', 'production/B'])
        assert.deepEqual(
          got.staged.map((v) => `${v.importId}/${v.environment}/${v.name}`),
          [`${pending.id}/development/P`],
          'pending pushes only',
        )
        same(await store.getWrappedKey(id), bump(key))
        for (const v of got.variables) same((await storedValue(store, id, v.environment, v.name))?.sealed, bump(v.sealed), v.name)
        same((await stagedValues(store, pending.id))[0]?.sealed, bump(got.staged[0]!.sealed))
        assert.notEqual((await readLogged(store, id, 'development', entry(id, 'read'))).version, version, 'the version changes')
        same((await storedValue(store, other, 'development', 'Z'))?.sealed, otherBefore?.sealed, 'other vaults untouched')
        assert.equal(await store.resealVault(randomUUID(), async (c) => c), false)
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

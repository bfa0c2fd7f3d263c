import assert from 'node:assert/strict'
import { randomBytes, randomUUID } from 'node:crypto'
import type {
  AccessAction,
  AccessLogEntry,
  EnvironmentInfo,
  NewImport,
  Role,
  SealedVariable,
  StorageLimit,
  VariableWrite,
  VaultSecrets,
  VaultStore,
} from '../adapters/vault-store.js'
import { vaultAdminContract } from './vault-admin-contract.js'

/**
 * The contract every vault store must meet (adapters/vault-store.ts), as
 * plain async cases that throw (node:assert), so any runner can drive them.
 * With tap: `runVaultStoreContract(t, makeStore)`.
 *
 * `makeStore` returns a fresh, empty store, a `close` for it and, when the
 * backend can, a `probe` that looks at the stored data directly instead of
 * trusting the store's own answers (and can make chosen writes fail, to
 * check that what must be atomic is). Cases that need a probe are skipped
 * (they pass) without one.
 */
export interface VaultStoreFixture {
  readonly store: VaultStore
  readonly probe?: VaultStoreProbe
  close(): Promise<void>
}

/** A direct look into the backing data, bypassing the store. */
export interface VaultStoreProbe {
  /** staged (sealed) values stored for a push, whatever its status */
  stagedValueCount(importId: string): Promise<number>
  /** variables stored for an environment */
  variableCount(vaultId: string, environment: string): Promise<number>
  /** pushes stored for a vault, whatever their status */
  importCount(vaultId: string): Promise<number>
  /** access log entries stored for a vault */
  accessLogCount(vaultId: string): Promise<number>
  /**
   * Makes every later write into `what` fail (for `variables` and
   * `import_values`, only the rows named `name` when given) until the
   * returned function is called.
   */
  breakWrites(what: 'access_log' | 'variables' | 'import_values', name?: string): Promise<() => Promise<void>>
}

export type MakeVaultStore = () => Promise<VaultStoreFixture>

export interface VaultStoreContractCase {
  readonly name: string
  run(make: MakeVaultStore): Promise<void>
}

/**
 * The subset of tap's `t` the runner uses. `pass` takes a required message:
 * tap's `pass(...[msg, extra]: MessageExtra)` does not accept an explicit
 * `undefined` message, so `message?: string` would make tap's `Test` not
 * assignable to this interface.
 */
export interface ContractRunner {
  test(name: string, fn: (t: ContractRunner) => Promise<void>): unknown
  pass(message: string): unknown
}

/** Runs every case of the contract as a subtest of `t` (a case fails by throwing). */
export function runVaultStoreContract(t: ContractRunner, make: MakeVaultStore): void {
  for (const c of [...vaultStoreContract, ...vaultAdminContract]) {
    t.test(c.name, async (t) => {
      await c.run(make)
      t.pass('the case holds')
    })
  }
}

// ---- fixtures -----------------------------------------------------------------

const T0 = new Date('2026-11-21T10:00:00.000Z')
const MINUTE = 60_000
const DAY = 24 * 60 * MINUTE
const OWNER = 'person-owner'
const EDITOR = 'person-editor'
const STRANGER = 'person-stranger'
const LIMIT: StorageLimit = { maxVariables: 10_000, maxBytes: 20 * 1024 * 1024 }
const ENVS: readonly EnvironmentInfo[] = [
  { name: 'production', ownersOnly: true },
  { name: 'development', ownersOnly: false },
  { name: 'preview', ownersOnly: false },
]

const at = (ms: number): Date => new Date(T0.getTime() + ms)

/** Sealed-looking bytes: random, so a stored value can be compared byte for byte. */
function sealed(n = 40): Uint8Array {
  return new Uint8Array(randomBytes(n))
}

function sv(name: string, n?: number): SealedVariable {
  return { name, sealed: sealed(n) }
}

function entry(vaultId: string, action: AccessAction, over: Partial<AccessLogEntry> = {}): AccessLogEntry {
  return {
    vaultId,
    at: T0,
    personId: OWNER,
    signInId: 'sign-in-1',
    clientId: 'https://envkeep.test/cli/oauth-client.json',
    action,
    environment: 'development',
    names: [],
    address: '127.0.0.1',
    subject: null,
    detail: null,
    ...over,
  }
}

/** A VariableWrite with the default limit (`over` sets expect or limit). */
function put(vaultId: string, environment: string, value: SealedVariable, by: string | null, now: Date, over: Partial<VariableWrite> = {}): VariableWrite {
  return { vaultId, environment, value, by, now, limit: LIMIT, ...over }
}

async function withStore(make: MakeVaultStore, fn: (f: VaultStoreFixture) => Promise<void>): Promise<void> {
  const f = await make()
  try {
    await fn(f)
  } finally {
    await f.close()
  }
}

async function newVault(store: VaultStore, over: { name?: string; environments?: readonly EnvironmentInfo[] } = {}): Promise<string> {
  const id = randomUUID()
  await store.createVault(
    {
      id,
      name: over.name ?? `vault-${id.slice(0, 8)}`,
      ownerId: OWNER,
      plan: 'self-hosted',
      environments: over.environments ?? ENVS,
      now: T0,
    },
    entry(id, 'vault_created', { environment: null }),
  )
  return id
}

function newImport(vaultId: string, values: readonly SealedVariable[], over: Partial<NewImport> = {}): NewImport {
  return {
    id: randomUUID(),
    vaultId,
    environment: 'development',
    senderId: EDITOR,
    signInId: 'sign-in-2',
    values,
    refused: [],
    createdAt: T0,
    expiresAt: at(7 * DAY),
    limit: LIMIT,
    ...over,
  }
}

/** Byte-for-byte equality that never prints the bytes (sealed values stay out of test output). */
function same(a: Uint8Array | null | undefined, b: Uint8Array | null | undefined, message?: string): void {
  assert.ok(a && b, message ?? 'bytes present')
  assert.ok(Buffer.from(a).equals(Buffer.from(b)), message ?? 'the same bytes')
}

/** Names of what the store returned, so a failing assertion never prints sealed bytes. */
const namesOf = (vs: readonly SealedVariable[]): string[] => vs.map((v) => v.name)

async function rejectsWith(p: Promise<unknown>, sqlstate: string, message?: string): Promise<Error & { sqlstate: string }> {
  let caught: unknown
  await p.then(
    () => assert.fail(message ?? `expected a StorageError ${sqlstate}`),
    (err: unknown) => {
      caught = err
    },
  )
  const e = caught as Error & { sqlstate: string }
  assert.equal(e.name, 'StorageError', message ?? 'a StorageError')
  assert.equal(e.sqlstate, sqlstate, message)
  return e
}

// ---- cases ---------------------------------------------------------------------

export const vaultStoreContract: readonly VaultStoreContractCase[] = [
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
    name: "listVaults and findVaultsByName: the person's vaults only, in name order, with their role",
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
        assert.deepEqual((await store.findVaultsByName('alpha', OWNER)).map((v) => v.id).sort(), [a, a2].sort())
        assert.deepEqual(
          (await store.findVaultsByName('alpha', EDITOR)).map((v) => v.id),
          [a],
        )
        assert.deepEqual(await store.findVaultsByName('ALPHA', OWNER), [], 'exact name')
        assert.deepEqual(await store.findVaultsByName('charlie', EDITOR), [])
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
      withStore(make, async ({ store }) => {
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
        await new Promise((resolve) => setTimeout(resolve, 20))
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
        await store.setVariable(put(id, 'development', sv('A'), OWNER, T0), entry(id, 'variable_set'))
        await store.setVariable(put(id, 'production', sv('B'), OWNER, T0), entry(id, 'variable_set'))
        const pending = newImport(id, [sv('P')])
        assert.ok((await store.createImport(pending, entry(id, 'push_created'))).ok)
        const decided = newImport(id, [sv('Q')])
        assert.ok((await store.createImport(decided, entry(id, 'push_created'))).ok)
        await store.decideImport({ importId: decided.id, decision: 'rejected', by: OWNER, now: T0 }, entry(id, 'push_rejected'))
        const other = await newVault(store)
        await store.ensureWrappedKey(other, async () => sealed(60))
        await store.setVariable(put(other, 'development', sv('Z'), OWNER, T0), entry(other, 'variable_set'))
        const otherBefore = await store.getVariable(other, 'development', 'Z')
        const version = (await store.readVariables(id, 'development', entry(id, 'read'))).version

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
        for (const v of got.variables) same((await store.getVariable(id, v.environment, v.name))?.sealed, bump(v.sealed), v.name)
        same((await store.getImportValues(pending.id))[0]?.sealed, bump(got.staged[0]!.sealed))
        assert.notEqual((await store.readVariables(id, 'development', entry(id, 'read'))).version, version, 'the version changes')
        same((await store.getVariable(other, 'development', 'Z'))?.sealed, otherBefore?.sealed, 'other vaults untouched')
        assert.equal(await store.resealVault(randomUUID(), async (c) => c), false)
      }),
  },
  {
    name: 'sealedUnder: a write sealed under a key the vault no longer has is refused (stale_key), nothing written',
    run: (make) =>
      withStore(make, async ({ store }) => {
        const id = await newVault(store)
        const key = sealed(60)
        await store.ensureWrappedKey(id, async () => key)
        assert.ok((await store.setVariable(put(id, 'development', sv('A'), OWNER, T0, { sealedUnder: key }), entry(id, 'variable_set'))).ok)
        const logged = (await store.listAccessLog(id, { limit: 100 })).length
        const stale = sealed(60)
        assert.deepEqual(await store.setVariable(put(id, 'development', sv('B'), OWNER, T0, { sealedUnder: stale }), entry(id, 'variable_set')), {
          ok: false,
          reason: 'stale_key',
        })
        assert.deepEqual(await store.createImport(newImport(id, [sv('C')], { sealedUnder: stale }), entry(id, 'push_created')), {
          ok: false,
          reason: 'stale_key',
        })
        assert.equal(await store.getVariable(id, 'development', 'B'), null)
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
          await store.setVariable(put(id, 'development', v, i % 2 ? OWNER : EDITOR, at(i * MINUTE)), entry(id, 'variable_set', { names: [v.name] }))
        }
        const names = ['ALPHA', 'Beta', 'ZED', '_mid']
        const meta = await store.listVariableNames(id, 'development')
        assert.deepEqual(
          meta.map((m) => m.name),
          names,
        )
        const alpha = meta[0]
        assert.ok(alpha)
        assert.equal(alpha.updatedAt.getTime(), at(MINUTE).getTime())
        assert.equal(alpha.updatedBy, OWNER)
        assert.equal(meta[2]?.updatedBy, EDITOR)
        const got = await store.getVariable(id, 'development', 'ALPHA')
        assert.equal(got?.name, 'ALPHA')
        same(got?.sealed, view)
        assert.equal(got?.sealed.byteLength, 40)
        assert.equal(await store.getVariable(id, 'development', 'NOPE'), null)
        assert.equal(await store.getVariable(id, 'preview', 'ALPHA'), null, 'environments are separate')
        const { variables } = await store.readVariables(id, 'development', entry(id, 'read'))
        assert.deepEqual(
          variables.map((v) => v.name),
          names,
        )
        for (const v of values) same(variables.find((x) => x.name === v.name)?.sealed, v.sealed, v.name)
        // overwrite
        const next = sealed()
        await store.setVariable(put(id, 'development', { name: 'ZED', sealed: next }, OWNER, at(DAY)), entry(id, 'variable_set'))
        same((await store.getVariable(id, 'development', 'ZED'))?.sealed, next)
        assert.equal((await store.listVariableNames(id, 'development')).find((m) => m.name === 'ZED')?.updatedAt.getTime(), at(DAY).getTime())
        // delete
        assert.deepEqual(
          await store.deleteVariable(
            { vaultId: id, environment: 'development', name: 'ZED', by: OWNER, now: T0 },
            entry(id, 'variable_deleted', { names: ['ZED'] }),
          ),
          { ok: true },
        )
        assert.deepEqual(
          await store.deleteVariable(
            { vaultId: id, environment: 'development', name: 'ZED', by: OWNER, now: T0 },
            entry(id, 'variable_deleted', { names: ['ZED'] }),
          ),
          { ok: false, reason: 'absent' },
        )
        assert.equal(await store.getVariable(id, 'development', 'ZED'), null)
        assert.deepEqual(
          (await store.listVariableNames(id, 'development')).map((m) => m.name),
          ['ALPHA', 'Beta', '_mid'],
        )
        assert.deepEqual(await store.listVariableNames(id, 'preview'), [])
      }),
  },
  {
    name: 'version: changes on set, delete and apply; not on read, reject or a delete of nothing',
    run: (make) =>
      withStore(make, async ({ store }) => {
        const id = await newVault(store)
        const read = async (env = 'development') => (await store.readVariables(id, env, entry(id, 'read', { environment: env }))).version
        const v0 = await read()
        assert.equal(await read(), v0, 'a read changes nothing')
        await store.setVariable(put(id, 'development', sv('A'), OWNER, T0), entry(id, 'variable_set'))
        const v1 = await read()
        assert.notEqual(v1, v0)
        await store.setVariable(put(id, 'development', sv('A'), OWNER, T0), entry(id, 'variable_set'))
        const v2 = await read()
        assert.notEqual(v2, v1, 'an overwrite changes it')
        const pv = await read('preview')
        await store.setVariable(put(id, 'preview', sv('P'), OWNER, T0), entry(id, 'variable_set'))
        assert.equal(await read(), v2, "another environment's change does not")
        assert.notEqual(await read('preview'), pv)
        const logged = (await store.listAccessLog(id, { limit: 1000, action: 'variable_deleted' })).length
        assert.deepEqual(
          await store.deleteVariable({ vaultId: id, environment: 'development', name: 'NOPE', by: OWNER, now: T0 }, entry(id, 'variable_deleted')),
          { ok: false, reason: 'absent' },
        )
        assert.equal(await read(), v2, 'deleting nothing changes nothing')
        assert.equal((await store.listAccessLog(id, { limit: 1000, action: 'variable_deleted' })).length, logged, 'and logs nothing')
        await store.deleteVariable({ vaultId: id, environment: 'development', name: 'A', by: OWNER, now: T0 }, entry(id, 'variable_deleted'))
        const v3 = await read()
        assert.notEqual(v3, v2)
        const rejected = await store.createImport(newImport(id, [sv('R')]), entry(id, 'push_created'))
        assert.ok(rejected.ok)
        await store.decideImport({ importId: rejected.import.id, decision: 'rejected', by: OWNER, now: T0 }, entry(id, 'push_rejected'))
        assert.equal(await read(), v3, 'a rejected push changes nothing')
        const applied = await store.createImport(newImport(id, [sv('R')]), entry(id, 'push_created'))
        assert.ok(applied.ok)
        assert.equal(await read(), v3, 'a pending push changes nothing')
        await store.decideImport({ importId: applied.import.id, decision: 'applied', by: OWNER, now: T0 }, entry(id, 'push_applied'))
        assert.notEqual(await read(), v3, 'an applied push changes it')
      }),
  },
  {
    name: "readVariables appends its log entry with the names read (the caller's names are replaced)",
    run: (make) =>
      withStore(make, async ({ store }) => {
        const id = await newVault(store)
        await store.setVariable(put(id, 'development', sv('B'), OWNER, T0), entry(id, 'variable_set', { names: ['B'] }))
        await store.setVariable(put(id, 'development', sv('A'), OWNER, T0), entry(id, 'variable_set', { names: ['A'] }))
        await store.readVariables(id, 'development', entry(id, 'read', { names: ['SOMETHING_ELSE'], at: at(MINUTE) }))
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
        await store.readVariables(id, 'preview', entry(id, 'read', { environment: 'preview', names: ['X'] }))
        const [empty] = await store.listAccessLog(id, { limit: 1 })
        assert.deepEqual(empty?.names, [], 'an empty read logs no names')
      }),
  },
  {
    name: 'readVariables of chosen names: only those (that exist) are returned and logged',
    run: (make) =>
      withStore(make, async ({ store }) => {
        const id = await newVault(store)
        const a = sv('A')
        await store.setVariable(put(id, 'development', a, OWNER, T0), entry(id, 'variable_set'))
        await store.setVariable(put(id, 'development', sv('B'), OWNER, T0), entry(id, 'variable_set'))
        await store.setVariable(put(id, 'development', sv('C'), OWNER, T0), entry(id, 'variable_set'))
        const r = await store.readVariables(id, 'development', entry(id, 'read'), ['C', 'A', 'NOPE'])
        assert.deepEqual(namesOf(r.variables), ['A', 'C'])
        same(r.variables[0]?.sealed, a.sealed)
        const [last] = await store.listAccessLog(id, { limit: 1 })
        assert.deepEqual(last?.names, ['A', 'C'])
        const none = await store.readVariables(id, 'development', entry(id, 'read'), ['NOPE'])
        assert.deepEqual(none.variables, [])
      }),
  },
  {
    name: 'readVariables: if the log entry cannot be written, the read fails and nothing is logged',
    run: (make) =>
      withStore(make, async ({ store, probe }) => {
        if (!probe) return
        const id = await newVault(store)
        await store.setVariable(put(id, 'development', sv('A'), OWNER, T0), entry(id, 'variable_set'))
        const before = await probe.accessLogCount(id)
        const undo = await probe.breakWrites('access_log')
        try {
          await assert.rejects(store.readVariables(id, 'development', entry(id, 'read')))
        } finally {
          await undo()
        }
        assert.equal(await probe.accessLogCount(id), before)
        const ok = await store.readVariables(id, 'development', entry(id, 'read'))
        assert.equal(ok.variables.length, 1, 'works again once the log can be written')
        assert.equal(await probe.accessLogCount(id), before + 1)
      }),
  },
  {
    name: 'setVariable and deleteVariable are one transaction with their log entry',
    run: (make) =>
      withStore(make, async ({ store, probe }) => {
        if (!probe) return
        const id = await newVault(store)
        const first = sv('A')
        await store.setVariable(put(id, 'development', first, OWNER, T0), entry(id, 'variable_set'))
        const version = (await store.readVariables(id, 'development', entry(id, 'read'))).version
        const undo = await probe.breakWrites('access_log')
        try {
          await assert.rejects(store.setVariable(put(id, 'development', sv('A'), OWNER, T0), entry(id, 'variable_set')))
          await assert.rejects(store.setVariable(put(id, 'development', sv('NEW'), OWNER, T0), entry(id, 'variable_set')))
          await assert.rejects(store.deleteVariable({ vaultId: id, environment: 'development', name: 'A', by: OWNER, now: T0 }, entry(id, 'variable_deleted')))
        } finally {
          await undo()
        }
        same((await store.getVariable(id, 'development', 'A'))?.sealed, first.sealed, 'not overwritten')
        assert.equal(await store.getVariable(id, 'development', 'NEW'), null, 'not inserted')
        assert.equal(await probe.variableCount(id, 'development'), 1)
        assert.equal((await store.readVariables(id, 'development', entry(id, 'read'))).version, version)
      }),
  },
  {
    name: 'setVariable: expect new refuses an existing name, expect existing an absent one; created says which',
    run: (make) =>
      withStore(make, async ({ store }) => {
        const id = await newVault(store)
        const first = sv('A')
        const logged = async () => (await store.listAccessLog(id, { limit: 100 })).length
        const before = await logged()
        assert.deepEqual(await store.setVariable(put(id, 'development', sv('A'), OWNER, T0, { expect: 'existing' }), entry(id, 'variable_set')), {
          ok: false,
          reason: 'absent',
        })
        assert.deepEqual(await store.setVariable(put(id, 'development', first, OWNER, T0, { expect: 'new' }), entry(id, 'variable_set')), {
          ok: true,
          created: true,
        })
        assert.deepEqual(await store.setVariable(put(id, 'development', sv('A'), OWNER, T0, { expect: 'new' }), entry(id, 'variable_set')), {
          ok: false,
          reason: 'exists',
        })
        same((await store.getVariable(id, 'development', 'A'))?.sealed, first.sealed, 'a refusal writes nothing')
        assert.equal(await logged(), before + 1, 'and logs nothing')
        const next = sv('A')
        assert.deepEqual(await store.setVariable(put(id, 'development', next, null, at(MINUTE), { expect: 'existing' }), entry(id, 'variable_set')), {
          ok: true,
          created: false,
        })
        same((await store.getVariable(id, 'development', 'A'))?.sealed, next.sealed)
        assert.equal((await store.listVariableNames(id, 'development'))[0]?.updatedBy, null, 'the administrator writes as nobody')
      }),
  },
  {
    name: 'setVariable checks the storage limit in its transaction: new names and bigger values count, pending pushes too',
    run: (make) =>
      withStore(make, async ({ store }) => {
        const id = await newVault(store)
        const limit: StorageLimit = { maxVariables: 3, maxBytes: 300 }
        const set = (name: string, n: number, env = 'development') =>
          store.setVariable(put(id, env, sv(name, n), OWNER, T0, { limit }), entry(id, 'variable_set', { environment: env, names: [name] }))
        assert.ok((await set('A', 100)).ok)
        assert.ok((await store.createImport(newImport(id, [sv('P', 100)]), entry(id, 'push_created'))).ok)
        assert.ok((await set('B', 100, 'preview')).ok, '300 bytes: exactly at the limit')
        const logged = (await store.listAccessLog(id, { limit: 100 })).length
        assert.deepEqual(await set('C', 1), { ok: false, reason: 'storage_limit', limit: 'variables', usage: 4, max: 3 }, 'A, B and the staged P count')
        assert.deepEqual(await set('A', 101), { ok: false, reason: 'storage_limit', limit: 'bytes', usage: 301, max: 300 }, 'an overwrite counts its growth')
        assert.equal((await store.listAccessLog(id, { limit: 100 })).length, logged, 'a refusal logs nothing')
        assert.equal(await store.getVariable(id, 'development', 'C'), null)
        assert.ok((await set('A', 60)).ok, 'a smaller value fits')
        const tooMany = await set('D', 1)
        assert.deepEqual(tooMany, { ok: false, reason: 'storage_limit', limit: 'variables', usage: 4, max: 3 })
        // a vault over a limit that shrank may still shrink
        const shrunk: StorageLimit = { maxVariables: 1, maxBytes: 50 }
        assert.ok((await store.setVariable(put(id, 'development', sv('A', 10), OWNER, T0, { limit: shrunk }), entry(id, 'variable_set'))).ok)
        const grow = await store.setVariable(put(id, 'development', sv('A', 20), OWNER, T0, { limit: shrunk }), entry(id, 'variable_set'))
        assert.equal(grow.ok, false, 'but not grow')
      }),
  },
  {
    name: 'setVariable into an environment that does not exist: 23503, nothing stored',
    run: (make) =>
      withStore(make, async ({ store }) => {
        const id = await newVault(store)
        await rejectsWith(store.setVariable(put(id, 'nowhere', sv('A'), OWNER, T0), entry(id, 'variable_set')), '23503')
        assert.deepEqual(await store.listVariableNames(id, 'nowhere'), [])
      }),
  },
  {
    name: 'concurrent setVariable calls all land',
    run: (make) =>
      withStore(make, async ({ store }) => {
        const id = await newVault(store)
        const v0 = (await store.readVariables(id, 'development', entry(id, 'read'))).version
        const names = Array.from({ length: 20 }, (_, i) => `V${String(i).padStart(2, '0')}`)
        await Promise.all(names.map((n) => store.setVariable(put(id, 'development', sv(n), OWNER, T0), entry(id, 'variable_set'))))
        const r = await store.readVariables(id, 'development', entry(id, 'read'))
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
  {
    name: 'createImport: pending, names in order, overwrites, refused lines, staged values, push_created logged',
    run: (make) =>
      withStore(make, async ({ store, probe }) => {
        const id = await newVault(store)
        await store.setVariable(put(id, 'development', sv('EXISTS'), OWNER, T0), entry(id, 'variable_set'))
        await store.setVariable(put(id, 'preview', sv('ELSEWHERE'), OWNER, T0), entry(id, 'variable_set'))
        const values = [sv('NEW_B'), sv('EXISTS'), sv('ELSEWHERE'), sv('NEW_A')]
        const refused = [
          { line: 3, name: '', reason: 'not a NAME=value line' },
          { line: 9, name: 'NEW_A', reason: 'duplicate of line 12, which was sent' },
        ]
        const input = newImport(id, values, { refused })
        const r = await store.createImport(input, entry(id, 'push_created', { personId: EDITOR, names: ['X'] }))
        assert.ok(r.ok)
        assert.deepEqual(r.import, {
          id: input.id,
          vaultId: id,
          environment: 'development',
          senderId: EDITOR,
          signInId: 'sign-in-2',
          status: 'pending',
          names: ['ELSEWHERE', 'EXISTS', 'NEW_A', 'NEW_B'],
          overwrites: ['EXISTS'],
          refused,
          createdAt: T0,
          expiresAt: at(7 * DAY),
          decidedAt: null,
          decidedBy: null,
          reason: null,
        })
        assert.deepEqual(await store.getImport(input.id, T0), r.import, 'read back the same')
        const staged = await store.getImportValues(input.id)
        assert.deepEqual(
          staged.map((v) => v.name),
          ['ELSEWHERE', 'EXISTS', 'NEW_A', 'NEW_B'],
        )
        for (const v of values) same(staged.find((s) => s.name === v.name)?.sealed, v.sealed, v.name)
        assert.deepEqual(
          (await store.listVariableNames(id, 'development')).map((m) => m.name),
          ['EXISTS'],
          'staged values are not variables',
        )
        const [last] = await store.listAccessLog(id, { limit: 1 })
        assert.equal(last?.action, 'push_created')
        assert.equal(last?.personId, EDITOR)
        if (probe) assert.equal(await probe.stagedValueCount(input.id), 4)
        assert.equal(await store.getImport(randomUUID(), T0), null)
        assert.deepEqual(await store.getImportValues(randomUUID()), [])
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
          (await store.getImportValues(first.id)).map((v) => v.name),
          ['A'],
        )
        assert.equal((await store.listAccessLog(id, { limit: 100 })).length, logs)
        if (probe) assert.equal(await probe.importCount(id), 1)
      }),
  },
  {
    name: 'createImport is one transaction: a failing log entry or staged value leaves nothing',
    run: (make) =>
      withStore(make, async ({ store, probe }) => {
        if (!probe) return
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
        await store.setVariable(put(id, 'development', sv('A', 100), OWNER, T0), entry(id, 'variable_set'))
        await store.setVariable(put(id, 'preview', sv('B', 100), OWNER, T0), entry(id, 'variable_set'))
        const pending = await store.createImport(newImport(id, [sv('C', 100)]), entry(id, 'push_created'))
        assert.ok(pending.ok)
        // 3 stored or staged; another vault's data does not count
        const other = await newVault(store)
        await store.setVariable(put(other, 'development', sv('Z', 1000), OWNER, T0), entry(other, 'variable_set'))

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
        if (probe) assert.equal(await probe.stagedValueCount(rejected.id), 0)

        // decided pushes free their staged space
        await store.decideImport({ importId: fits.import.id, decision: 'rejected', by: OWNER, now: T0 }, entry(id, 'push_rejected'))
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
        assert.equal((await store.getImportValues(input.id)).length, 2)
        const r = await store.getImport(input.id, at(DAY))
        assert.equal(r?.status, 'expired')
        assert.equal(r?.decidedAt?.getTime(), at(DAY).getTime())
        assert.equal(r?.decidedBy, null)
        assert.deepEqual(r?.names, ['A', 'B'], 'names are kept')
        assert.deepEqual(namesOf(await store.getImportValues(input.id)), [])
        if (probe) assert.equal(await probe.stagedValueCount(input.id), 0)
        const expiredLogs = async () => (await store.listAccessLog(id, { limit: 100, action: 'push_expired' })).length
        assert.equal(await expiredLogs(), 1)
        const [log] = await store.listAccessLog(id, { limit: 1, action: 'push_expired' })
        assert.deepEqual(log?.names, ['A', 'B'])
        assert.equal(log?.environment, 'development')
        const again = await store.getImport(input.id, at(2 * DAY))
        assert.equal(again?.decidedAt?.getTime(), at(DAY).getTime(), 'terminal: never changes')
        assert.equal(await expiredLogs(), 1)
        assert.deepEqual(await store.listVariableNames(id, 'development'), [], 'nothing applied')
      }),
  },
  {
    name: 'expiring is atomic too: if push_expired cannot be logged, the push stays pending with its staged values',
    run: (make) =>
      withStore(make, async ({ store, probe }) => {
        if (!probe) return
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
        assert.equal(await store.expireImports(at(DAY)), 2, 'expires once the log works')
      }),
  },
  {
    name: 'decideImport applied: every staged value becomes a variable byte for byte, in one go',
    run: (make) =>
      withStore(make, async ({ store, probe }) => {
        const id = await newVault(store)
        const old = sv('A')
        await store.setVariable(put(id, 'development', old, OWNER, T0), entry(id, 'variable_set'))
        const values = [sv('A'), sv('B'), sv('C')]
        const input = newImport(id, values)
        assert.ok((await store.createImport(input, entry(id, 'push_created'))).ok)
        const r = await store.decideImport(
          { importId: input.id, decision: 'applied', by: OWNER, now: at(MINUTE) },
          entry(id, 'push_applied', { names: ['A', 'B', 'C'] }),
        )
        assert.ok(r.ok)
        assert.equal(r.import.status, 'applied')
        assert.equal(r.import.decidedAt?.getTime(), at(MINUTE).getTime())
        assert.equal(r.import.decidedBy, OWNER)
        assert.deepEqual(await store.getImport(input.id, at(MINUTE)), r.import)
        const read = await store.readVariables(id, 'development', entry(id, 'read'))
        assert.deepEqual(
          read.variables.map((v) => v.name),
          ['A', 'B', 'C'],
        )
        for (const v of values) same(read.variables.find((x) => x.name === v.name)?.sealed, v.sealed, v.name)
        const meta = await store.listVariableNames(id, 'development')
        assert.ok(meta.every((m) => m.updatedBy === OWNER && m.updatedAt.getTime() === at(MINUTE).getTime()))
        assert.deepEqual(namesOf(await store.getImportValues(input.id)), [], 'staged values deleted')
        if (probe) assert.equal(await probe.stagedValueCount(input.id), 0)
        const actions = (await store.listAccessLog(id, { limit: 100 })).map((l) => l.action)
        assert.ok(actions.includes('push_applied'))
        // terminal
        const twice = await store.decideImport({ importId: input.id, decision: 'rejected', by: EDITOR, now: at(2 * MINUTE) }, entry(id, 'push_rejected'))
        assert.equal(twice.ok, false)
        assert.equal(twice.import.status, 'applied')
        assert.equal(twice.import.decidedBy, OWNER)
        assert.equal((await store.listAccessLog(id, { limit: 100, action: 'push_rejected' })).length, 0)
      }),
  },
  {
    name: 'decideImport rejected: variables untouched, staged values deleted, names kept',
    run: (make) =>
      withStore(make, async ({ store, probe }) => {
        const id = await newVault(store)
        const keep = sv('A')
        await store.setVariable(put(id, 'development', keep, OWNER, T0), entry(id, 'variable_set'))
        const input = newImport(id, [sv('A'), sv('B')])
        assert.ok((await store.createImport(input, entry(id, 'push_created'))).ok)
        const r = await store.decideImport({ importId: input.id, decision: 'rejected', by: EDITOR, now: at(MINUTE) }, entry(id, 'push_rejected'))
        assert.ok(r.ok)
        assert.equal(r.import.status, 'rejected')
        assert.equal(r.import.decidedBy, EDITOR)
        assert.deepEqual(r.import.names, ['A', 'B'])
        same((await store.getVariable(id, 'development', 'A'))?.sealed, keep.sealed)
        assert.equal(await store.getVariable(id, 'development', 'B'), null)
        assert.deepEqual(namesOf(await store.getImportValues(input.id)), [])
        if (probe) assert.equal(await probe.stagedValueCount(input.id), 0)
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
        assert.equal(r.ok, false)
        assert.equal(r.import.status, 'expired')
        assert.equal(r.import.decidedAt?.getTime(), at(DAY).getTime())
        assert.equal(await store.getVariable(id, 'development', 'A'), null)
        assert.deepEqual(namesOf(await store.getImportValues(input.id)), [])
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
        if (!probe) return
        const id = await newVault(store)
        const old = sv('A')
        await store.setVariable(put(id, 'development', old, OWNER, T0), entry(id, 'variable_set'))
        const version = (await store.readVariables(id, 'development', entry(id, 'read'))).version
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
          same((await store.getVariable(id, 'development', 'A'))?.sealed, old.sealed, `${what}: A not overwritten`)
          assert.equal(await store.getVariable(id, 'development', 'B'), null, `${what}: B not written`)
          assert.equal(await probe.variableCount(id, 'development'), 1)
          assert.equal((await store.getImport(input.id, at(MINUTE)))?.status, 'pending', `${what}: still pending`)
          assert.equal(await probe.stagedValueCount(input.id), 3, `${what}: staged values kept`)
          assert.equal((await store.readVariables(id, 'development', entry(id, 'read'))).version, version)
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
        assert.equal(final?.status === 'applied', (await store.getVariable(id, 'development', 'A')) !== null)
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
        assert.equal(await store.expireImports(at(2 * DAY)), 2)
        assert.equal(await store.expireImports(at(2 * DAY)), 0, 'a second sweep finds nothing')
        for (const [i, exp] of [
          [due1, at(DAY)],
          [due2, at(2 * DAY)],
        ] as const) {
          const r = await store.getImport(i.id, at(2 * DAY))
          assert.equal(r?.status, 'expired')
          assert.equal(r?.decidedAt?.getTime(), exp.getTime())
          if (probe) assert.equal(await probe.stagedValueCount(i.id), 0)
        }
        assert.equal((await store.getImport(later.id, at(2 * DAY)))?.status, 'pending')
        assert.equal((await store.getImport(decided.id, at(2 * DAY)))?.status, 'rejected')
        assert.equal((await store.getImportValues(later.id)).length, 1)
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

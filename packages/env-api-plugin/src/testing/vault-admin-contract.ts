import type { ImportStore } from '../adapters/import-store.js'
import assert from 'node:assert/strict'
import { randomBytes, randomUUID } from 'node:crypto'
import type { HistoryStore } from '../adapters/history-store.js'
import type { AccessLogEntry, VaultStore } from '../adapters/vault-store.js'
import type { MakeVaultStore, VaultStoreContractCase } from './contract/types.js'
import { getVault, stagedValues, storedValue } from './contract/fixtures.js'
import { writeTestValue } from './write-value.js'

/**
 * The vault store's administration (issue 14): rename, delete with its
 * audit row, environment rules, a rejected push's reason. Run by
 * runVaultStoreContract with the rest of the vault store's cases.
 */

const T0 = new Date('2026-11-21T10:00:00.000Z')
const OWNER = 'person-owner'
const LIMIT = { maxVariables: 10_000, maxBytes: 20 * 1024 * 1024 }

function log(vaultId: string, action: AccessLogEntry['action'], over: Partial<AccessLogEntry> = {}): AccessLogEntry {
  return {
    vaultId,
    at: T0,
    personId: OWNER,
    signInId: null,
    clientId: null,
    action,
    environment: null,
    names: [],
    address: null,
    subject: null,
    detail: null,
    ...over,
  }
}

async function use(make: MakeVaultStore, fn: (store: VaultStore & ImportStore & HistoryStore) => Promise<void>): Promise<void> {
  const f = await make()
  try {
    await fn(f.store)
  } finally {
    await f.close()
  }
}

async function vault(store: VaultStore, name = 'acme'): Promise<string> {
  const id = randomUUID()
  await store.createVault(
    {
      id,
      name,
      ownerId: OWNER,
      plan: 'self-hosted',
      environments: [
        { name: 'development', ownersOnly: false },
        { name: 'production', ownersOnly: true },
        { name: 'qa', ownersOnly: false, secondPerson: true },
      ],
      now: T0,
    },
    log(id, 'vault_created'),
  )
  return id
}

const DONE = { ok: true, value: undefined }
const NOT_FOUND = { ok: false, reason: 'not_found' }

export const vaultAdminContract: readonly VaultStoreContractCase[] = [
  {
    name: 'changeVault rename: renames and logs in one transaction; an unknown vault is not_found',
    run: (make) =>
      use(make, async (store) => {
        const id = await vault(store)
        assert.deepEqual(await store.changeVault({ kind: 'rename', vaultId: id, name: 'Acme Shop' }, log(id, 'vault_renamed', { detail: 'Acme Shop' })), DONE)
        assert.equal((await getVault(store, id, OWNER))?.name, 'Acme Shop')
        const [entry] = await store.listAccessLog(id, { limit: 1 })
        assert.equal(entry?.action, 'vault_renamed')
        assert.equal(entry?.detail, 'Acme Shop')
        assert.deepEqual(await store.changeVault({ kind: 'rename', vaultId: randomUUID(), name: 'x' }, log(id, 'vault_renamed')), NOT_FOUND)
      }),
  },
  {
    name: 'deleteVault removes everything the vault holds and leaves one audit row',
    run: (make) =>
      use(make, async (store) => {
        const keep = await vault(store, 'keep')
        const id = await vault(store)
        await store.changeMember({ kind: 'set', vaultId: id, personId: 'person-editor', role: 'editor' }, log(id, 'member_added'))
        await writeTestValue(
          store,
          { vaultId: id, environment: 'development', value: { name: 'A', sealed: new Uint8Array(randomBytes(40)) }, by: OWNER, now: T0, limit: LIMIT },
          log(id, 'variable_set'),
        )
        const importId = randomUUID()
        await store.createImport(
          {
            id: importId,
            vaultId: id,
            environment: 'development',
            senderId: OWNER,
            signInId: null,
            values: [{ name: 'B', sealed: new Uint8Array(randomBytes(40)) }],
            refused: [],
            createdAt: T0,
            expiresAt: new Date(T0.getTime() + 86_400_000),
            limit: LIMIT,
          },
          log(id, 'push_created'),
        )
        const before = (await store.listAudit({ limit: 100 })).length
        assert.deepEqual(await store.deleteVault({ vaultId: id, by: OWNER, at: T0 }), DONE)
        assert.equal(await getVault(store, id, OWNER), null)
        assert.deepEqual(await store.findVaults({ id }), [])
        assert.deepEqual(await store.listMembers(id), [])
        assert.equal(await storedValue(store, id, 'development', 'A'), null)
        assert.equal(await store.getImport(importId, T0), null)
        assert.deepEqual(await stagedValues(store, importId), [])
        assert.deepEqual(await store.listAccessLog(id, { limit: 10 }), [])
        const audit = await store.listAudit({ limit: 100 })
        assert.equal(audit.length, before + 1)
        assert.deepEqual({ ...audit[0], id: 0 }, { id: 0, at: T0, personId: OWNER, action: 'vault_deleted', vaultId: id, vaultName: 'acme' })
        assert.deepEqual(await store.deleteVault({ vaultId: id, by: null, at: T0 }), NOT_FOUND, 'twice: nothing')
        assert.equal((await store.listAudit({ limit: 100 })).length, before + 1)
        assert.equal((await getVault(store, keep, OWNER))?.name, 'keep', 'other vaults untouched')
      }),
  },
  {
    name: 'changeVault environment_rules: owners-only and second-person (absent ones kept), logged; unknown is not_found',
    run: (make) =>
      use(make, async (store) => {
        const id = await vault(store)
        const envs = async () =>
          Object.fromEntries(((await getVault(store, id, OWNER))?.environments ?? []).map((e) => [e.name, [e.ownersOnly, e.secondPerson]]))
        assert.deepEqual(await envs(), { development: [false, false], production: [true, true], qa: [false, true] })
        assert.deepEqual(
          await store.changeVault({ kind: 'environment_rules', vaultId: id, environment: 'production', secondPerson: false }, log(id, 'environment_changed')),
          DONE,
        )
        assert.deepEqual(
          await store.changeVault({ kind: 'environment_rules', vaultId: id, environment: 'development', ownersOnly: true }, log(id, 'environment_changed')),
          DONE,
        )
        assert.deepEqual(await envs(), { development: [true, false], production: [true, false], qa: [false, true] })
        assert.equal((await store.listAccessLog(id, { action: 'environment_changed', limit: 10 })).length, 2)
        assert.deepEqual(
          await store.changeVault({ kind: 'environment_rules', vaultId: id, environment: 'nope', ownersOnly: true }, log(id, 'environment_changed')),
          NOT_FOUND,
        )
        assert.equal((await store.listAccessLog(id, { action: 'environment_changed', limit: 10 })).length, 2)
      }),
  },
  {
    name: "a rejected push keeps its decider's reason; an applied one has none",
    run: (make) =>
      use(make, async (store) => {
        const id = await vault(store)
        const push = async () => {
          const importId = randomUUID()
          await store.createImport(
            {
              id: importId,
              vaultId: id,
              environment: 'development',
              senderId: 'person-editor',
              signInId: null,
              values: [{ name: 'B', sealed: new Uint8Array(randomBytes(40)) }],
              refused: [],
              createdAt: T0,
              expiresAt: new Date(T0.getTime() + 86_400_000),
              limit: LIMIT,
            },
            log(id, 'push_created'),
          )
          return importId
        }
        const rejected = await push()
        const r = await store.decideImport(
          { importId: rejected, decision: 'rejected', by: OWNER, now: T0, reason: 'wrong database host' },
          log(id, 'push_rejected'),
        )
        assert.ok(r.ok)
        assert.equal(r.value.reason, 'wrong database host')
        assert.equal((await store.getImport(rejected, T0))?.reason, 'wrong database host')
        const applied = await push()
        await store.decideImport({ importId: applied, decision: 'applied', by: OWNER, now: T0, reason: 'ignored' }, log(id, 'push_applied'))
        assert.equal((await store.getImport(applied, T0))?.reason, null)
      }),
  },
]

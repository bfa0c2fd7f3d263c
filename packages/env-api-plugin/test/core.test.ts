import Fastify from 'fastify'
import t from 'tap'
import envApi, { ADMINISTRATOR, createEnvkeepCore, DomainFailure, type PeopleAdapter, type Storage } from '../src/index.js'
import { createTestKeyring } from '../src/testing/keyring.js'
import { mintSignIn } from '../src/testing/sign-in.js'
import { storageUnderTest } from './storage-under-test.js'

// One core per plugin instance (issue 19): the domain and its crypto are
// built once, and every surface given the core uses that one.

const BASE_URL = 'https://envkeep.example'
const T0 = new Date('2026-11-21T12:00:00.000Z')
const people: PeopleAdapter = {
  currentPerson: async () => null,
  signInUrl: () => '/login',
  getPerson: async () => null,
  findPersonByEmail: async () => null,
}

/** The store with its data-key reads counted. */
function counting(storage: Storage): { storage: Storage; reads: { keys: number } } {
  const reads = { keys: 0 }
  return {
    reads,
    storage: new Proxy(storage, {
      get(target, key, receiver) {
        const v = Reflect.get(target, key, receiver)
        if (key !== 'getWrappedKey' || typeof v !== 'function') return v
        return (...args: unknown[]) => {
          reads.keys++
          return (v as (...a: unknown[]) => unknown).apply(target, args)
        }
      },
    }),
  }
}

t.test("the plugin given a core reads what the host wrote through it with the core's data key: no second unwrap", async (t) => {
  const base = await storageUnderTest(t)
  t.teardown(() => base.close())
  const { storage, reads } = counting(base)
  const inner = createTestKeyring()
  const unwraps = { count: 0 }
  const keyring: typeof inner = {
    wrap: (key, vaultId) => inner.wrap(key, vaultId),
    unwrap: (wrapped, vaultId) => {
      unwraps.count++
      return inner.unwrap(wrapped, vaultId)
    },
  }
  const core = createEnvkeepCore({ storage, keyring, people, now: () => T0 })
  const app = Fastify()
  await app.register(envApi, { baseUrl: BASE_URL, storage, keyring, people, core })
  await app.ready()
  t.teardown(() => app.close())

  const vault = await core.domain.createVault(ADMINISTRATOR, { name: 'shop', ownerId: 'p-ana' })
  await core.domain.writeVariable(ADMINISTRATOR, { vaultId: vault.id, environment: 'development', name: 'API_URL', value: 'canary-1', mode: 'set' })
  t.ok(reads.keys > 0, 'the write read the vault key')
  const before = unwraps.count

  const { accessToken } = await mintSignIn(base, { baseUrl: BASE_URL, personId: 'p-ana', now: T0 })
  const res = await app.inject({ method: 'GET', url: `/api/env/${vault.id}/development`, headers: { authorization: `Bearer ${accessToken}` } })
  t.equal(res.statusCode, 200)
  t.same(res.json().variables, { API_URL: 'canary-1' })
  // the sign-in minted meanwhile is a change: the core reads the stored wrap again (issue 20), and
  // finds it unchanged, so the key the write unwrapped is used again
  t.equal(unwraps.count, before, "the API opened with the core's data key, not unwrapped again")
})

t.test('a core over another store, or a core setting given again with another value, never boots', async (t) => {
  const storage = await storageUnderTest(t)
  t.teardown(() => storage.close())
  const other = await storageUnderTest(t)
  t.teardown(() => other.close())
  const keyring = createTestKeyring()
  const core = createEnvkeepCore({ storage, keyring, people })
  const register = async (extra: object) => {
    const app = Fastify()
    try {
      await app.register(envApi, { baseUrl: BASE_URL, storage, keyring, people, core, ...extra })
      await app.ready()
    } finally {
      await app.close()
    }
  }
  await t.rejects(register({ storage: other }), { name: 'TypeError', message: /same storage and keyring/ })
  await t.rejects(register({ keyring: createTestKeyring() }), { name: 'TypeError', message: /same storage and keyring/ })
  await t.rejects(register({ now: () => T0, importTtlMs: 1000 }), { name: 'TypeError', message: /option now, importTtlMs differs from the core's/ })
  await t.rejects(register({ plans: { 'self-hosted': { maxVariables: 1, maxBytes: 1 } } }), { name: 'TypeError', message: /option plans differs/ })
  await t.resolves(
    register({ now: core.now, importTtlMs: 7 * 86_400_000, plans: { 'self-hosted': { maxVariables: 10_000, maxBytes: 20 * 1024 * 1024 } } }),
    'the same settings again boot',
  )
  t.throws(() => createEnvkeepCore({ storage, keyring, people, historyDays: 0 }), TypeError)
  t.throws(() => createEnvkeepCore({ storage, keyring: undefined as never, people }), TypeError)
})

t.test("the administrator's own operations refuse a person", async (t) => {
  const storage = await storageUnderTest(t)
  t.teardown(() => storage.close())
  const { domain } = createEnvkeepCore({ storage, keyring: null, people })
  const person = { kind: 'person', personId: 'p-ana', signInId: null, clientId: null, address: null } as const
  await t.rejects(
    domain.listAudit(person as unknown as typeof ADMINISTRATOR, { limit: 10 }),
    new DomainFailure('forbidden', 'only the server administrator can read the audit log'),
  )
  await t.rejects(domain.revokeAllSignIns(person as unknown as typeof ADMINISTRATOR, 'p-bob'), DomainFailure)
  t.same(await domain.listAudit(ADMINISTRATOR, { limit: 10 }), [])
})

t.test('without a key, value operations fail with not_configured: a failure of the keys, not a refusal', async (t) => {
  const storage = await storageUnderTest(t)
  t.teardown(() => storage.close())
  const { domain } = createEnvkeepCore({ storage, keyring: null, people })
  const vault = await domain.createVault(ADMINISTRATOR, { name: 'shop', ownerId: 'p-ana' })
  await t.rejects(domain.revealValues(ADMINISTRATOR, { vaultId: vault.id, environment: 'development' }), {
    kind: 'not_configured',
    code: 'not_configured',
    reason: 'the server has no key for variables',
  })
})

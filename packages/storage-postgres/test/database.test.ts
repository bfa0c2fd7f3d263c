import t from 'tap'
import { sql } from 'kysely'
import { withTestDatabase } from '@envkeep/test-support'
import { StorageError } from '@envkeep/env-api-plugin'
import { testLogEntry } from '@envkeep/env-api-plugin/testing'
import { createPostgresStorage, inTransaction, openPostgres } from '../src/index.js'

// The PostgreSQL specifics: SQLSTATE codes straight from the server, the statement limit as
// statement_timeout (57014 → 504), migrations run again safely, no row value in an error.

t.test('SQLSTATEs from PostgreSQL: 23505 names the constraint, never the row; 57014 past the statement limit (504)', async (t) => {
  const url = await withTestDatabase(t)
  if (!url) return
  const storage = await createPostgresStorage({ connectionString: url, statementTimeoutMs: 200 })
  t.teardown(() => storage.close())
  const vault = {
    id: 'v-canary-row-id',
    name: 'canary-row-name',
    ownerId: 'o',
    plan: 'p',
    environments: [{ name: 'development', ownersOnly: false }],
    now: new Date(),
  }
  await storage.createVault(vault, testLogEntry({ vaultId: vault.id, action: 'vault_created' }))
  const dup = await storage.createVault(vault, testLogEntry({ vaultId: vault.id, action: 'vault_created' })).catch((e: unknown) => e)
  t.ok(dup instanceof StorageError)
  t.equal((dup as StorageError).sqlstate, '23505')
  t.equal((dup as StorageError).detail, 'vaults_pkey')
  t.notMatch((dup as StorageError).message, /canary/)
  const slow = await inTransaction(storage.database.db, (trx) => sql`select pg_sleep(2)`.execute(trx)).catch((e: unknown) => e)
  t.ok(slow instanceof StorageError)
  t.equal((slow as StorageError).sqlstate, '57014')
  t.equal((slow as StorageError).status, 504)
  t.match((slow as StorageError).message, /^57014 statement timeout/)
})

t.test('an unreachable database is 08006 (503)', async (t) => {
  const err = await openPostgres({ connectionString: 'postgres://nobody@127.0.0.1:1/none' }).catch((e: unknown) => e)
  t.ok(err instanceof StorageError)
  t.equal((err as StorageError).sqlstate, '08006')
  t.equal((err as StorageError).status, 503)
})

t.test('migrations: a second open (another process starting) changes nothing and keeps the data', async (t) => {
  const url = await withTestDatabase(t)
  if (!url) return
  const [a, b] = await Promise.all([createPostgresStorage({ connectionString: url }), createPostgresStorage({ connectionString: url })])
  await a.createVault(
    { id: 'v1', name: 'shop', ownerId: 'o', plan: 'p', environments: [], now: new Date() },
    testLogEntry({ vaultId: 'v1', action: 'vault_created' }),
  )
  await a.close()
  const c = await createPostgresStorage({ connectionString: url })
  t.equal((await c.findVaults({ id: 'v1' })).length, 1)
  t.equal((await b.findVaults({ id: 'v1' })).length, 1, 'both processes see one database')
  await b.close()
  await c.close()
})

t.test('request counters are shared and atomic: 200 concurrent counts from two pools give 1…200', async (t) => {
  const url = await withTestDatabase(t)
  if (!url) return
  const a = await createPostgresStorage({ connectionString: url, pool: 5 })
  const b = await createPostgresStorage({ connectionString: url, pool: 5 })
  t.teardown(async () => {
    await a.close()
    await b.close()
  })
  const now = new Date(Date.UTC(2026, 10, 22, 12, 0, 30))
  const counts = await Promise.all(Array.from({ length: 200 }, (_, i) => (i % 2 ? a : b).countRequest('sign-in:x', [60_000, 86_400_000], now)))
  t.same(
    counts.map((c) => c[0]!.count).sort((x, y) => x - y),
    Array.from({ length: 200 }, (_, i) => i + 1),
  )
  t.equal(counts[0]![0]!.resetAt.toISOString(), '2026-11-22T12:01:30.000Z', 'the window started with its first request')
  const next = await a.countRequest('sign-in:x', [60_000, 86_400_000], new Date(now.getTime() + 60_000))
  t.equal(next[0]!.count, 1, 'a new minute starts at 1')
  t.equal(next[1]!.count, 201, 'the day goes on')

  // read without counting, and forget: what per-account back-offs across processes need
  t.same(await b.peekRequests('sign-in:x', 86_400_000), { count: 201, windowStart: now }, 'peeked from the other pool, not counted')
  t.equal((await a.peekRequests('sign-in:x', 86_400_000))!.count, 201)
  t.equal(await a.peekRequests('sign-in:x', 1234), null, 'a window never counted: null')
  t.equal(await a.peekRequests('sign-in:none', 60_000), null)
  await a.countRequest('sign-in:y', [60_000], now)
  t.same(await b.countRequest('sign-in:x', [], now, true), [], 'afresh with no windows: only forgets')
  t.equal(await a.peekRequests('sign-in:x', 60_000), null, 'every window of the key is forgotten')
  t.equal(await a.peekRequests('sign-in:x', 86_400_000), null)
  t.equal((await a.peekRequests('sign-in:y', 60_000))!.count, 1, 'other keys are kept')
  t.equal((await a.countRequest('sign-in:x', [60_000], now))[0]!.count, 1, 'counting starts afresh')
  t.equal((await a.countRequest('sign-in:y', [60_000], now, true))[0]!.count, 1, 'afresh with a window: forgets, then counts one')
})

t.test('the expiry sweep on several processes at once: each push expires exactly once (one push_expired entry)', async (t) => {
  const url = await withTestDatabase(t)
  if (!url) return
  const stores = await Promise.all([1, 2, 3].map(() => createPostgresStorage({ connectionString: url, pool: 3 })))
  t.teardown(() => Promise.all(stores.map((s) => s.close())))
  const [a] = stores
  const t0 = new Date('2026-11-22T12:00:00Z')
  await a!.createVault(
    { id: 'v1', name: 'shop', ownerId: 'o', plan: 'p', environments: [{ name: 'development', ownersOnly: false }], now: t0 },
    testLogEntry({ vaultId: 'v1', action: 'vault_created' }),
  )
  for (let i = 0; i < 20; i++) {
    const r = await a!.createImport(
      {
        id: `i${i}`,
        vaultId: 'v1',
        environment: 'development',
        senderId: 'o',
        signInId: null,
        values: [{ name: 'A', sealed: new Uint8Array([1, 2, 3]) }],
        refused: [],
        createdAt: t0,
        expiresAt: new Date(t0.getTime() + 1000),
        limit: { maxVariables: 1e6, maxBytes: 1e9 },
      },
      testLogEntry({ vaultId: 'v1', action: 'push_created' }),
    )
    t.ok(r.ok)
  }
  const later = new Date(t0.getTime() + 5000)
  const expired = await Promise.all([...stores, ...stores].map((s) => s.expireImports(later)))
  t.equal(
    expired.reduce((x, y) => x + (y.ok ? y.value : 0), 0),
    20,
    'twenty expiries in all, whichever sweep did them',
  )
  t.equal((await a!.listAccessLog('v1', { action: 'push_expired', limit: 100 })).length, 20, 'one push_expired entry per push')
})

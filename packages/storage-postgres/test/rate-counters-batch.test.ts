import t, { type Test } from 'tap'
import { withTestDatabase } from '@envkeep/test-support'
import { createPostgresStorage, type PostgresStorage } from '../src/index.js'
import { commitsOf, databaseStat } from './database-stats.js'

// Issue 20 on PostgreSQL: the request counts of concurrent requests (the API's rate limit
// counts every request, in two windows) are written together, one statement and one
// transaction for all of them, each request still getting its own number. Counted with the
// server's own transaction counter for the database.

const MINUTE = 60_000
const DAY = 86_400_000

/** Two stores on one database: two server processes. */
async function twoStores(t: Test, url: string): Promise<[PostgresStorage, PostgresStorage]> {
  const a = await createPostgresStorage({ connectionString: url, schema: 'counters', pool: 2 })
  const b = await createPostgresStorage({ connectionString: url, schema: 'counters', pool: 2 })
  t.teardown(async () => {
    await a.close()
    await b.close()
  })
  return [a, b]
}

t.test('concurrent counts share one transaction; each request gets its own count, per key and window', async (t) => {
  const url = await withTestDatabase(t)
  if (!url) return
  const store = await createPostgresStorage({ connectionString: url, schema: 'counters', pool: 4 })
  t.teardown(() => store.close())
  const counted = await commitsOf(store)
  const now = new Date(Date.UTC(2026, 10, 26, 9, 0, 0))
  const keys = ['sign-in:a', 'sign-in:b', 'address:127.0.0.1']
  const requests = 60
  const { result, used } = await counted(() =>
    Promise.all(Array.from({ length: requests }, (_, i) => store.countRequest(keys[i % keys.length] as string, [MINUTE, DAY], now))),
  )
  t.ok(used <= 2, `${requests} counts committed in ${used} transaction(s), not one each`)
  for (const [k, key] of keys.entries()) {
    const mine = result.filter((_, i) => i % keys.length === k)
    t.same(
      mine.map((c) => c[0]?.count),
      Array.from({ length: requests / keys.length }, (_, i) => i + 1),
      `${key}: the minute counted 1…${requests / keys.length}, in the order asked`,
    )
    t.same(
      mine.map((c) => c[1]?.count),
      Array.from({ length: requests / keys.length }, (_, i) => i + 1),
      `${key}: the day too`,
    )
    t.equal(mine[0]?.[0]?.resetAt.toISOString(), '2026-11-26T09:01:00.000Z', 'the minute started with its first request')
    t.equal(mine[0]?.[1]?.resetAt.toISOString(), '2026-11-27T09:00:00.000Z', 'the day too')
  }
  // the next turn goes on from the stored counts; a window that is over starts again at 1
  const later = new Date(now.getTime() + MINUTE)
  const next = await Promise.all([store.countRequest('sign-in:a', [MINUTE, DAY], later), store.countRequest('sign-in:a', [MINUTE, DAY], later)])
  t.same(
    next.map((c) => c.map((w) => w.count)),
    [
      [1, 21],
      [2, 22],
    ],
  )
  t.same(await store.peekRequests('sign-in:a', MINUTE), { count: 2, windowStart: later })
})

t.test('a key that cannot be counted fails its own requests only', async (t) => {
  const url = await withTestDatabase(t)
  if (!url) return
  const store = await createPostgresStorage({ connectionString: url, schema: 'counters', pool: 4 })
  t.teardown(() => store.close())
  const now = new Date()
  // PostgreSQL refuses a NUL in text (22021): the batch fails, and is counted key by key
  const results = await Promise.allSettled([
    store.countRequest('sign-in:good', [MINUTE], now),
    store.countRequest('sign-in:bad\u0000', [MINUTE], now),
    store.countRequest('sign-in:good', [MINUTE], now),
  ])
  t.same(
    results.map((r) => r.status),
    ['fulfilled', 'rejected', 'fulfilled'],
  )
  t.equal((results[1] as PromiseRejectedResult).reason.sqlstate, '22021', 'the failure is the database’s, as a StorageError')
  t.same(
    results.filter((r) => r.status === 'fulfilled').map((r) => r.value[0]?.count),
    [1, 2],
    'the good key counted both, once each',
  )
  t.equal((await store.peekRequests('sign-in:good', MINUTE))?.count, 2)
})

t.test('counts commit without waiting for the disk; data and the access log still wait', async (t) => {
  const url = await withTestDatabase(t)
  if (!url) return
  const store = await createPostgresStorage({ connectionString: url, schema: 'counters', pool: 4 })
  t.teardown(() => store.close())
  const setting = async (pool: PostgresStorage['database']['pool']) =>
    (await pool.query<{ synchronous_commit: string }>('show synchronous_commit')).rows[0]?.synchronous_commit
  t.equal(await setting(store.database.pool), 'on', 'the pool of data and the log: durable commits')
  t.equal(await setting(store.database.lazyPool), 'off', 'the counters’ pool: lazy commits')
  await store.database.lazyPool.end()
  const failed = await store.countRequest('sign-in:a', [MINUTE], new Date()).catch((err: unknown) => err)
  t.match(failed, { sqlstate: '08003' }, 'counts run on the counters’ pool: closed, a count fails')
  t.equal(await store.peekRequests('sign-in:a', MINUTE), null, 'nothing counted')
})

t.test('a count is seen at once by another process', async (t) => {
  const url = await withTestDatabase(t)
  if (!url) return
  const [a, b] = await twoStores(t, url)
  const now = new Date()
  await a.countRequest('sign-in:a', [MINUTE], now)
  t.equal((await b.peekRequests('sign-in:a', MINUTE))?.count, 1, 'the other process sees it once it is answered')
  t.equal((await b.countRequest('sign-in:a', [MINUTE], now))[0]?.count, 2, 'and counts on from it')
})

t.test('two processes counting the same keys in opposite orders at once never deadlock', async (t) => {
  const url = await withTestDatabase(t)
  if (!url) return
  const [a, b] = await twoStores(t, url)
  const deadlocks = () => databaseStat(a, 'deadlocks')
  const keys = Array.from({ length: 300 }, (_, i) => `sign-in:${String(i).padStart(3, '0')}`)
  const before = await deadlocks()
  const now = new Date()
  const rounds = 10
  for (let round = 0; round < rounds; round++) {
    await Promise.all([...keys.map((k) => a.countRequest(k, [MINUTE, DAY], now)), ...[...keys].reverse().map((k) => b.countRequest(k, [MINUTE, DAY], now))])
  }
  t.equal((await deadlocks()) - before, 0, 'no deadlock')
  const kept = await Promise.all(keys.map(async (k) => (await a.peekRequests(k, DAY))?.count))
  t.same(kept, Array(keys.length).fill(2 * rounds), 'every count kept')
})

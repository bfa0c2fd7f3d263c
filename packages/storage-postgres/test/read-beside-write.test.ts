import t from 'tap'
import pg from 'pg'
import { testLogEntry } from '@envkeep/env-api-plugin/testing'
import { withTestDatabase } from '@envkeep/test-support'
import { createPostgresStorage } from '../src/index.js'
import { push, T0 } from './push-fixture.js'

// A write of a vault locks the vault's row for its whole transaction (vault-lock.ts), and every
// access-log row a read appends checks its vault through the foreign key, which takes a key-share
// lock on that row. The write's lock must not be one that key-share waits for (`for update`),
// or every read of the vault waits for the write in progress (a 1 MiB push: tens of ms). Whether
// the append waits is read from PostgreSQL's own view of who waits for a lock, never timed.

/** Waits until a backend running a statement that begins with `start` waits for a lock, or `settled` says to stop; true if one did. */
async function waitsForLock(watcher: pg.Client, start: string, settled: () => boolean): Promise<boolean> {
  for (;;) {
    const r = await watcher.query(
      `select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and starts_with(ltrim(query), $1)`,
      [start],
    )
    if ((r.rows[0] as { n: number }).n > 0) return true
    if (settled()) return false
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

t.test('a read is logged while a push of the same vault holds the vault lock', async (t) => {
  const url = await withTestDatabase(t)
  if (!url) return
  const storage = await createPostgresStorage({ connectionString: url, pool: 4 })
  t.teardown(() => storage.close())
  await storage.createVault(
    { id: 'v1', name: 'v1', ownerId: 'o', plan: 'p', environments: [{ name: 'development', ownersOnly: false }], now: T0 },
    testLogEntry({ vaultId: 'v1', action: 'vault_created' }),
  )
  t.ok((await storage.createImport(push('p0', 'v1'), testLogEntry({ vaultId: 'v1', action: 'push_created' }))).ok, 'a first push')

  const blocker = new pg.Client({ connectionString: url })
  const watcher = new pg.Client({ connectionString: url })
  await blocker.connect()
  await watcher.connect()
  t.teardown(async () => {
    await blocker.end()
    await watcher.end()
  })
  // another session holds the pushes' table: the next push locks its vault, then waits here
  await blocker.query('begin')
  await blocker.query('lock table imports in access exclusive mode')
  let pushed = false
  const pushing = storage.createImport(push('p1', 'v1'), testLogEntry({ vaultId: 'v1', action: 'push_created' })).finally(() => {
    pushed = true
  })
  // its rows, its count and its log entry: one statement (pipelined-write.test.ts), which waits
  t.ok(await waitsForLock(watcher, 'with s0 as (insert into "imports"', () => pushed), 'the push holds the vault lock and waits for the pushes table')
  const held = await watcher.query(
    `select count(*)::int as n from pg_locks l join pg_class c on c.oid = l.relation where c.relname = 'vaults' and l.granted and l.mode = 'RowShareLock'`,
  )
  t.ok((held.rows[0] as { n: number }).n > 0, "the push's row lock on vaults is granted")

  // a read of the same vault appends its log row now
  let logged = false
  const appending = storage.appendAccessLog(testLogEntry({ vaultId: 'v1', action: 'read', environment: 'development', names: ['A'] })).finally(() => {
    logged = true
  })
  const waited = await waitsForLock(watcher, 'insert into "access_log"', () => logged)
  t.notOk(waited, 'the access-log row does not wait for the push in progress')
  if (waited) {
    await blocker.query('rollback')
    await appending
    await pushing
    return
  }
  t.ok((await appending).ok, 'the read is logged while the push still waits')
  t.notOk(pushed, 'the push has not finished yet')

  await blocker.query('rollback')
  t.ok((await pushing).ok, 'the push then completes')
  const rows = await storage.listAccessLog('v1', { action: 'read', limit: 10 })
  t.equal(rows.length, 1, 'one read in the log')
})

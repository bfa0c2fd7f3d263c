import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import t from 'tap'
import { TEST_NO_LIMIT, testLogEntry } from '@envkeep/env-api-plugin/testing'
import { first, raw, run } from '@envkeep/storage-sql'
import { sql } from 'kysely'
import { type CommitSync, openCommitSync } from '../src/commit-sync.js'
import { type OpenDatabase, openDatabase } from '../src/database.js'
import { createSqliteRunner } from '../src/sql-runner.js'
import { createSqliteStorage } from '../src/index.js'

// Issue 20: the runner's commits are synced off the event loop (commit-sync.ts). What must
// hold: a write settles only after a disk sync that started after its COMMIT; a read that may
// have seen a commit not yet on disk waits for it; commits made while a sync runs share the
// next one; a failed sync fails every waiting and later operation (503), and nothing more is
// committed; kysely's statements (the server's accounts, the migrations) still run at
// synchronous = FULL, and the level is set only when the connection changes hands.

type Tap = { teardown(fn: () => unknown): void }

/** A disk sync the test lets finish (or fail) when it chooses. */
function heldSync() {
  const calls: ((err: NodeJS.ErrnoException | null) => void)[] = []
  return {
    sync: (_fd: number, done: (err: NodeJS.ErrnoException | null) => void) => void calls.push(done),
    get started() {
      return calls.length
    },
    finish(i: number, err: NodeJS.ErrnoException | null = null) {
      const done = calls[i]
      if (!done) throw new Error(`sync ${i} was never started`)
      done(err)
    },
  }
}

async function setup(t: Tap, sync: (fd: number, done: (err: NodeJS.ErrnoException | null) => void) => void) {
  const dir = mkdtempSync(join(tmpdir(), 'envkeep-commit-sync-'))
  const file = join(dir, 'db.sqlite')
  // the connection's own sync off (durability normal): the held sync is the only one
  const opened = await openDatabase({ filename: file, durability: 'normal' })
  const commits = openCommitSync(`${file}-wal`, sync) as CommitSync
  const d: OpenDatabase = { ...opened, commits }
  t.teardown(async () => {
    await opened.close()
    await commits.close()
    rmSync(dir, { recursive: true, force: true })
  })
  opened.sqlite.exec('create table t (n integer)')
  const runner = createSqliteRunner(d)
  const insert = (n: number) => runner.write(() => run(raw(runner.dialect, sql`insert into t (n) values (${n})`)))
  const count = () => runner.read(() => first(raw(runner.dialect, sql<{ c: number }>`select count(*) as c from t`))).then((r) => r?.c)
  return { file, commits, runner, insert, count }
}

/** Lets the event loop run its pending turns (the runner commits in a setImmediate). */
const turns = async (n = 3) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r))
}

function state<T>(p: Promise<T>) {
  const s = { settled: false, value: undefined as T | undefined, error: undefined as unknown }
  p.then(
    (v) => {
      s.settled = true
      s.value = v
    },
    (e) => {
      s.settled = true
      s.error = e
    },
  )
  return s
}

function committedRows(file: string): number {
  const other = new Database(file, { readonly: true })
  try {
    return (other.prepare('select count(*) as c from t').get() as { c: number }).c
  } finally {
    other.close()
  }
}

t.test('a write settles only after a sync that started after its commit; a read that saw it waits too', async (t) => {
  const held = heldSync()
  const { file, insert, count } = await setup(t, held.sync)
  const w = state(insert(1))
  await turns()
  t.equal(committedRows(file), 1, 'committed (another connection sees it)')
  t.equal(held.started, 1, 'its sync started')
  t.notOk(w.settled, 'the write has not settled: its sync is still running')
  const r = state(count())
  await turns()
  t.notOk(r.settled, 'a read made now waits: it may have seen the commit')
  held.finish(0)
  await turns()
  t.ok(w.settled && w.error === undefined, 'the write settled once the sync finished')
  t.equal(r.value, 1, 'and the read with it, having seen the row')
  const quiet = state(count())
  await turns(1)
  t.equal(quiet.value, 1, 'with every commit on disk, a read does not wait')
  t.equal(held.started, 1, 'and starts no sync')
})

t.test('writes asked for while a sync runs are held, committed together when it ends, and share the next sync', async (t) => {
  const held = heldSync()
  const { file, insert } = await setup(t, held.sync)
  const first = state(insert(1))
  await turns()
  t.equal(held.started, 1)
  const second = state(insert(2))
  await turns()
  const third = state(insert(3))
  await turns()
  t.equal(held.started, 1, 'no second sync while the first runs')
  t.notOk(second.settled || third.settled)
  t.equal(committedRows(file), 1, 'the later two are held, not committed, while the sync runs')
  held.finish(0)
  await turns()
  t.ok(first.settled, 'the first write settled')
  t.equal(committedRows(file), 3, 'the held two committed once it ended')
  t.notOk(second.settled || third.settled, 'and wait for the next sync: their commit came after that one began')
  t.equal(held.started, 2, 'one sync for both')
  held.finish(1)
  await turns()
  t.ok(second.settled && third.settled && second.error === undefined && third.error === undefined)
  t.equal(held.started, 2, 'and no more')
})

t.test('a failed sync fails what waits for it and everything after, with nothing more committed', async (t) => {
  const held = heldSync()
  const { file, insert, count } = await setup(t, held.sync)
  const w = state(insert(1))
  await turns()
  held.finish(0, Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }))
  await turns()
  const err = w.error as { name?: string; sqlstate?: string; status?: number; message?: string }
  t.equal(err?.name, 'StorageError')
  t.equal(err?.sqlstate, '08006')
  t.equal(err?.status, 503, 'the database is unavailable')
  const later = await Promise.allSettled([insert(2), count()])
  t.same(
    later.map((o) => (o.status === 'rejected' ? (o.reason as { sqlstate?: string }).sqlstate : o.status)),
    ['08006', '08006'],
    'a later write and a later read fail the same way',
  )
  t.equal(committedRows(file), 1, 'the later write was not committed')
  t.equal(held.started, 1, 'no sync is tried again')
})

t.test('a sync that answers at once (a failing disk can) ends there: later writes fail, close returns', async (t) => {
  const { insert, file, commits } = await setup(t, (_fd, done) => done(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' })))
  const outcomes = await Promise.allSettled([insert(1)])
  const later = await Promise.race([
    insert(2).then(
      () => 'written',
      (e: { sqlstate?: string }) => e.sqlstate,
    ),
    new Promise((r) => setTimeout(() => r('still waiting'), 2000)),
  ])
  t.same(
    outcomes.map((o) => (o.status === 'rejected' ? (o.reason as { sqlstate?: string }).sqlstate : o.status)),
    ['08006'],
  )
  t.equal(later, '08006', 'a later write fails at once, not left waiting for a sync that ended')
  t.equal(committedRows(file), 1)
  const closed = await Promise.race([commits.close().then(() => 'closed'), new Promise((r) => setTimeout(() => r('still closing'), 2000))])
  t.equal(closed, 'closed')
})

t.test('a file database syncs the runner commits itself; kysely runs at FULL', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'envkeep-commit-sync-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const storage = await createSqliteStorage({ filename: join(dir, 'db.sqlite') })
  t.teardown(() => storage.close())
  const { commits, sqlite } = storage.database
  t.ok(commits, 'durability full on a file: commits are synced off the event loop')
  const before = commits?.syncs ?? 0
  const entry = {
    at: new Date(),
    personId: null,
    signInId: null,
    clientId: null,
    action: 'read' as const,
    environment: null,
    names: [],
    address: null,
    subject: null,
    detail: null,
  }
  await storage.createVault(
    {
      id: '00000000-0000-4000-8000-000000000001',
      name: 'v',
      ownerId: 'p',
      plan: 'self-hosted',
      environments: [{ name: 'development', ownersOnly: false }],
      now: new Date(),
    },
    { ...entry, vaultId: '00000000-0000-4000-8000-000000000001', action: 'vault_created' },
  )
  t.ok((commits?.syncs ?? 0) > before, 'the write waited for a real fdatasync')
  const level = () => sqlite.pragma('synchronous', { simple: true })
  t.equal(level(), 1, 'NORMAL after the batch: the runner syncs its commits itself')
  await storage.appendAccessLog({ ...entry, vaultId: '00000000-0000-4000-8000-000000000001' })
  t.equal(level(), 1, 'still NORMAL for the next batch: not set again per batch')
  await sql`create table kysely_write (n integer)`.execute(storage.database.db)
  t.equal(level(), 2, 'FULL for a kysely statement (the accounts and migrations sync in COMMIT)')
  await sql`insert into kysely_write values (1)`.execute(storage.database.db)
  t.equal(level(), 2, 'and for the next one')
  await storage.appendAccessLog({ ...entry, vaultId: '00000000-0000-4000-8000-000000000001' })
  t.equal(level(), 1, 'NORMAL again for the runner')
  const normal = await openDatabase({ filename: join(dir, 'normal.db'), durability: 'normal' })
  t.teardown(() => normal.close())
  t.equal(normal.commits, undefined, 'durability normal: no sync at all')
  const memory = await openDatabase({ filename: ':memory:' })
  t.teardown(() => memory.close())
  t.equal(memory.commits, undefined, 'nor in memory')
})

t.test('a WAL file that cannot be opened leaves the sync to SQLite', async (t) => {
  t.equal(openCommitSync(join(tmpdir(), 'envkeep-no-such-dir', 'db.sqlite-wal')), undefined)
})

// The webhook outbox's writes are one statement each (enqueue, claim): like every other write
// they answer only once on disk, whatever level kysely or the runner left the connection at.
t.test('the outbox writes (enqueue, claim) are synced before they answer', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'envkeep-commit-sync-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const storage = await createSqliteStorage({ filename: join(dir, 'db.sqlite') })
  t.teardown(() => storage.close())
  const { commits } = storage.database
  const syncs = () => commits?.syncs ?? 0
  const now = new Date()
  const vaultId = randomUUID()
  await storage.createVault(
    { id: vaultId, name: 'v', ownerId: 'p', plan: 'self-hosted', environments: [{ name: 'development', ownersOnly: false }], now },
    testLogEntry({ vaultId, action: 'vault_created', at: now }),
  )
  const webhook = {
    id: randomUUID(),
    vaultId,
    url: 'https://hooks.example.com/x',
    format: 'generic' as const,
    events: ['push.created' as const],
    sealedSecret: null,
    createdAt: now,
    createdBy: 'p',
  }
  t.ok((await storage.changeWebhook({ kind: 'create', webhook, most: 10 })).ok)
  const pushed = await storage.createImport(
    {
      id: randomUUID(),
      vaultId,
      environment: 'development',
      senderId: 'p',
      signInId: null,
      values: [{ name: 'A', sealed: new Uint8Array(40) }],
      refused: [],
      createdAt: now,
      expiresAt: new Date(now.getTime() + 60_000),
      limit: TEST_NO_LIMIT,
    },
    testLogEntry({ vaultId, action: 'push_created', at: now, environment: 'development', names: ['A'] }),
  )
  t.ok(pushed.ok)
  let before = syncs()
  t.same(await storage.enqueueDeliveries({ now, since: new Date(0) }), { ok: true, value: 1 })
  t.ok(syncs() > before, 'the enqueued delivery was synced before the enqueue answered')
  before = syncs()
  const claim = await storage.claimDeliveries({ now, leaseMs: 60_000, limit: 10, token: 'worker' })
  t.equal(claim.ok && claim.value.length, 1)
  t.ok(syncs() > before, 'the claim was synced before it answered')
})

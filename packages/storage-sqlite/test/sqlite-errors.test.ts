import { randomBytes, randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import t from 'tap'
import { StorageError, type AccessLogEntry } from '@envkeep/env-api-plugin'
import { createSqliteStorage, type OpenDatabase, type SqliteStorage } from '../src/index.js'
import { sqlstateFor, toStorageError, wrapStorage } from '../src/sqlite-errors.js'
import { testLogEntry, TEST_NO_LIMIT, writeTestValue, variableMetas } from '@envkeep/env-api-plugin/testing'

const T0 = new Date('2026-11-21T10:00:00.000Z')

function entry(vaultId: string, over: Partial<AccessLogEntry> = {}): AccessLogEntry {
  return {
    vaultId,
    at: T0,
    personId: 'p1',
    signInId: null,
    clientId: null,
    action: 'variable_set',
    environment: 'development',
    names: [],
    address: null,
    subject: null,
    detail: null,
    ...over,
  }
}

async function fresh(
  t: { teardown(fn: () => unknown): void },
  filename = ':memory:',
  busyTimeoutMs?: number,
): Promise<{ d: OpenDatabase; store: SqliteStorage; vaultId: string }> {
  const store = await createSqliteStorage(busyTimeoutMs === undefined ? { filename } : { filename, busyTimeoutMs })
  t.teardown(() => store.close())
  const d = store.database
  const vaultId = randomUUID()
  await store.createVault(
    {
      id: vaultId,
      name: 'errors',
      ownerId: 'p1',
      plan: 'self-hosted',
      environments: [{ name: 'development', ownersOnly: false }],
      now: T0,
    },
    testLogEntry({ vaultId: vaultId, action: 'vault_created' }),
  )
  return { d, store, vaultId }
}

async function caught(p: Promise<unknown>): Promise<StorageError> {
  try {
    await p
  } catch (err) {
    if (err instanceof StorageError) return err
    throw err
  }
  throw new Error('expected a rejection')
}

t.test("SQLite result codes map to the spec's SQLSTATE vocabulary", async (t) => {
  const table: [string, string][] = [
    ['SQLITE_CONSTRAINT_UNIQUE', '23505'],
    ['SQLITE_CONSTRAINT_PRIMARYKEY', '23505'],
    ['SQLITE_CONSTRAINT_FOREIGNKEY', '23503'],
    ['SQLITE_CONSTRAINT_CHECK', '23514'],
    ['SQLITE_CONSTRAINT_NOTNULL', '23514'],
    ['SQLITE_CONSTRAINT_TRIGGER', '23514'],
    ['SQLITE_BUSY', '55P03'],
    ['SQLITE_BUSY_SNAPSHOT', '55P03'],
    ['SQLITE_LOCKED', '55P03'],
    ['SQLITE_LOCKED_SHAREDCACHE', '55P03'],
    ['SQLITE_INTERRUPT', '57014'],
    ['SQLITE_CANTOPEN', '08006'],
    ['SQLITE_IOERR', '08006'],
    ['SQLITE_IOERR_WRITE', '08006'],
    ['SQLITE_FULL', '53100'],
    ['SQLITE_NOMEM', '53200'],
    ['SQLITE_READONLY', '25006'],
    ['SQLITE_CORRUPT', 'XX001'],
    ['SQLITE_ERROR', 'XX000'],
  ]
  for (const [code, state] of table) {
    t.equal(sqlstateFor(code), state, code)
    const e = toStorageError(new Database.SqliteError('some failure', code))
    t.ok(e instanceof StorageError, `${code} becomes a StorageError`)
    t.equal((e as StorageError).sqlstate, state)
  }
})

t.test('an interrupted statement is 57014 (better-sqlite3 cannot interrupt: mapped from the code)', async (t) => {
  const e = await caught(
    wrapStorage(() => {
      throw new Database.SqliteError('interrupted', 'SQLITE_INTERRUPT')
    }, 'variables'),
  )
  t.equal(e.sqlstate, '57014')
  t.equal(e.status, 504)
  t.equal(e.detail, 'variables')
})

t.test("errors that are not the database's pass through unchanged", async (t) => {
  const bug = new TypeError('a bug')
  t.equal(toStorageError(bug), bug)
  const se = new StorageError('23505', 'x')
  t.equal(toStorageError(se), se)
})

t.test('a closed database is 08006 (503), on every path', async (t) => {
  const { d, store, vaultId } = await fresh(t)
  await d.close()
  const calls: [string, () => Promise<unknown>][] = [
    ['listVaults', () => store.listVaults('p1')],
    ['readCurrent', () => store.readCurrent(vaultId, 'development')],
    ['appendAccessLog', () => store.appendAccessLog(entry(vaultId, { action: 'read' }))],
    [
      'changeVariables',
      () =>
        writeTestValue(
          store,
          { vaultId: vaultId, environment: 'development', value: { name: 'A', sealed: randomBytes(30) }, by: 'p1', now: T0, limit: TEST_NO_LIMIT },
          entry(vaultId),
        ),
    ],
    ['swapWrappedKey', () => store.swapWrappedKey({ kind: 'key', vaultId, expect: null, next: randomBytes(60) })],
  ]
  for (const [name, call] of calls) {
    const e = await caught(call())
    t.equal(e.sqlstate, '08006', name)
    t.equal(e.status, 503, name)
  }
})

t.test('a unique violation is 23505, names the constraint, never the row', async (t) => {
  const { store, vaultId } = await fresh(t)
  const canary = `CANARY_${randomUUID()}`
  const e = await caught(
    store.createVault(
      { id: vaultId, name: canary, ownerId: canary, plan: canary, environments: [], now: T0 },
      testLogEntry({ vaultId: vaultId, action: 'vault_created' }),
    ),
  )
  t.equal(e.sqlstate, '23505')
  t.equal(e.detail, 'vaults.id')
  t.equal(e.message, '23505 unique violation (vaults.id)')
  t.notMatch(e.message, canary)
  t.notMatch(e.message, vaultId)
})

t.test('a foreign key violation is 23503; a check violation is 23514 naming the rule', async (t) => {
  const { store, vaultId } = await fresh(t)
  const sealed = randomBytes(30)
  const fk = await caught(
    writeTestValue(store, { vaultId: vaultId, environment: 'nowhere', value: { name: 'A', sealed }, by: 'p1', now: T0, limit: TEST_NO_LIMIT }, entry(vaultId)),
  )
  t.equal(fk.sqlstate, '23503')
  t.equal(fk.detail, 'variables_environment', 'names the rule (changeVariables checks the environment first)')
  t.notMatch(fk.message, sealed.toString('hex'))
  const check = await caught(
    store.changeMember(
      { kind: 'set', vaultId: vaultId, personId: 'p2', role: 'admin' as never },
      testLogEntry({ vaultId: vaultId, action: 'member_added', subject: 'p2', detail: 'admin' as never }),
    ),
  )
  t.equal(check.sqlstate, '23514')
  t.equal(check.detail, 'members_role')
  t.notMatch(check.message, 'admin')
  const empty = await caught(
    writeTestValue(
      store,
      { vaultId: vaultId, environment: 'development', value: { name: 'A', sealed: new Uint8Array(0) }, by: 'p1', now: T0, limit: TEST_NO_LIMIT },
      entry(vaultId),
    ),
  )
  t.equal(empty.sqlstate, '23514')
  t.equal(empty.detail, 'variables_sealed')
})

t.test('a lock held by another connection is 55P03 once busy_timeout runs out', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'envkeep-busy-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const file = join(dir, 'busy.sqlite')
  const { store, vaultId } = await fresh(t, file, 20)
  const other = new Database(file)
  t.teardown(() => other.close())
  other.exec('begin immediate')
  t.teardown(() => {
    if (other.inTransaction) other.exec('rollback')
  })
  const e = await caught(
    writeTestValue(
      store,
      { vaultId: vaultId, environment: 'development', value: { name: 'A', sealed: randomBytes(30) }, by: 'p1', now: T0, limit: TEST_NO_LIMIT },
      entry(vaultId),
    ),
  )
  t.equal(e.sqlstate, '55P03')
  t.equal(e.status, 504)
  other.exec('rollback')
  await writeTestValue(
    store,
    { vaultId: vaultId, environment: 'development', value: { name: 'A', sealed: randomBytes(30) }, by: 'p1', now: T0, limit: TEST_NO_LIMIT },
    entry(vaultId),
  )
  t.equal((await variableMetas(store, vaultId, 'development')).length, 1, 'works once the lock is gone')
})

t.test('work waits for an open kysely transaction instead of joining it', async (t) => {
  const { d, store, vaultId } = await fresh(t)
  let release!: () => void
  const gate = new Promise<void>((r) => (release = r))
  let started!: () => void
  const inside = new Promise<void>((r) => (started = r))
  const tx = d.db
    .transaction()
    .execute(async (trx) => {
      await trx.insertInto('members').values({ vault_id: vaultId, person_id: 'p9', role: 'viewer' }).execute()
      started()
      await gate
      throw new Error('roll back')
    })
    .catch((err: unknown) => err)
  await inside
  const write = writeTestValue(
    store,
    { vaultId: vaultId, environment: 'development', value: { name: 'A', sealed: randomBytes(30) }, by: 'p1', now: T0, limit: TEST_NO_LIMIT },
    entry(vaultId),
  )
  release()
  await write
  t.match(await tx, { message: 'roll back' })
  t.same(
    (await store.listMembers(vaultId)).map((m) => m.personId),
    ['p1'],
    'the kysely transaction rolled back',
  )
  t.equal((await variableMetas(store, vaultId, 'development')).length, 1, "the store's write was not rolled back with it")
})

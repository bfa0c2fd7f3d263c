import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import t from 'tap'
import type { AccessAction, AccessLogEntry } from '@envkeep/env-api-plugin'
import { createSqliteStorage, type SqliteStorage } from '../src/index.js'
import { prepared } from '../src/statements.js'
import { testLogEntry, TEST_NO_LIMIT, writeTestValue } from '@envkeep/env-api-plugin/testing'

// The read path as the domain takes it: readCurrent (a read, no transaction),
// then appendAccessLog through the SQL core's runner, which commits the
// appends asked for in one turn of the event loop together (group commit:
// one transaction, one commit, one sync). What must hold for each read: its
// entry is committed before its promise settles, it names exactly what was
// read, and one read that cannot be logged fails alone.

const T0 = new Date('2026-11-21T12:00:00.000Z')
const OWNER = 'person-owner'

function entry(vaultId: string, environment: string, action: AccessAction = 'read'): AccessLogEntry {
  return { vaultId, at: T0, personId: OWNER, signInId: null, clientId: null, action, environment, names: [], address: '127.0.0.1', subject: null, detail: null }
}

async function setup(t: Tap): Promise<{ storage: SqliteStorage; file: string; vaults: string[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'envkeep-group-commit-'))
  const file = join(dir, 'db.sqlite')
  const storage = await createSqliteStorage({ filename: file })
  t.teardown(async () => {
    await storage.close()
    rmSync(dir, { recursive: true, force: true })
  })
  const vaults: string[] = []
  for (const [i, names] of [['A', 'B'], ['C'], []].entries()) {
    const id = `00000000-0000-4000-8000-00000000000${i}`
    await storage.createVault(
      {
        id,
        name: `v${i}`,
        ownerId: OWNER,
        plan: 'self-hosted',
        environments: [
          { name: 'development', ownersOnly: false },
          { name: 'preview', ownersOnly: false },
        ],
        now: T0,
      },
      testLogEntry({ vaultId: id, action: 'vault_created' }),
    )
    for (const name of names) {
      await writeTestValue(
        storage,
        { vaultId: id, environment: 'development', value: { name, sealed: Buffer.from(`sealed-${name}`) }, by: OWNER, now: T0, limit: TEST_NO_LIMIT },
        entry(id, 'development', 'variable_set'),
      )
    }
    vaults.push(id)
  }
  return { storage, file, vaults }
}

type Tap = { teardown(fn: () => unknown): void }

function readLog(file: string): { vault_id: string; environment: string; names: string }[] {
  // a second connection sees only what was committed
  const other = new Database(file, { readonly: true })
  try {
    return other.prepare(`select vault_id, environment, names from access_log where action = 'read' order by id`).all() as never
  } finally {
    other.close()
  }
}

/** A read as the domain makes it (domain/variables.ts): the values, then the entry naming them; answers once the entry is committed. */
async function readLogged(storage: SqliteStorage, vaultId: string, environment: string) {
  const r = await storage.readCurrent(vaultId, environment)
  await storage.appendAccessLog({ ...entry(vaultId, environment), names: r.variables.map((v) => v.name) })
  return r
}

/** Counts the COMMITs the runner runs from now on (its prepared COMMIT statement). */
function countCommits(t: Tap, storage: SqliteStorage): () => number {
  const commit = prepared(storage.database, 'COMMIT')
  const run = commit.run
  let n = 0
  commit.run = function (this: typeof commit, ...args: unknown[]) {
    n++
    return run.apply(this, args as never)
  } as typeof run
  t.teardown(() => {
    commit.run = run
  })
  return () => n
}

t.test('reads asked for together each get their own variables and their own entry, all in one commit', async (t) => {
  const { storage, file, vaults } = await setup(t)
  const [v0, v1, v2] = vaults as [string, string, string]
  const commits = countCommits(t, storage)
  const asked = [
    [v0, 'development'],
    [v1, 'development'],
    [v2, 'development'],
    [v0, 'preview'],
    [v0, 'development'],
  ] as const
  const seen: number[] = []
  const pending = asked.map(([v, env]) =>
    readLogged(storage, v, env).then((r) => {
      seen.push(readLog(file).length) // committed by the time this read settles
      return r
    }),
  )
  t.equal(readLog(file).length, 0, 'nothing is committed while the reads are asked for')
  const results = await Promise.all(pending)
  t.equal(commits(), 1, 'the five entries shared one commit')
  t.same(
    results.map((r) => r.variables.map((x) => x.name)),
    [['A', 'B'], ['C'], [], [], ['A', 'B']],
  )
  t.same(
    results[0]?.variables.map((x) => Buffer.from(x.sealed).toString()),
    ['sealed-A', 'sealed-B'],
    'the sealed bytes of each row',
  )
  t.ok(
    seen.every((n) => n === asked.length),
    'every entry was committed before any read settled',
  )
  t.same(
    readLog(file).map((r) => [r.vault_id, r.environment, JSON.parse(r.names)]),
    asked.map(([v, env], i) => [v, env, results[i]?.variables.map((x) => x.name)]),
    'one entry per read, in the order asked, naming what it read',
  )
})

t.test('reads asked for in different turns of the event loop commit apart', async (t) => {
  const { storage, file, vaults } = await setup(t)
  const v0 = vaults[0] as string
  const commits = countCommits(t, storage)
  await readLogged(storage, v0, 'development')
  await readLogged(storage, v0, 'development')
  t.equal(commits(), 2, 'one commit each: nothing waits for company')
  t.equal(readLog(file).length, 2)
})

t.test('one read whose entry cannot be written fails alone; the others are answered and logged', async (t) => {
  const { storage, file, vaults } = await setup(t)
  const [v0, v1] = vaults as [string, string]
  const missing = '00000000-0000-4000-8000-0000000000ff' // no such vault: its entry breaks the foreign key
  const commits = countCommits(t, storage)
  const outcomes = await Promise.allSettled([
    readLogged(storage, v0, 'development'),
    readLogged(storage, missing, 'development'),
    readLogged(storage, v1, 'development'),
  ])
  t.equal(outcomes[0]?.status, 'fulfilled')
  t.equal(outcomes[1]?.status, 'rejected')
  t.equal(outcomes[2]?.status, 'fulfilled')
  const err = outcomes[1]?.status === 'rejected' ? (outcomes[1].reason as { name?: string; sqlstate?: string }) : {}
  t.equal(err.name, 'StorageError')
  t.equal(err.sqlstate, '23503', 'foreign key violation')
  t.equal(commits(), 1, 'the failed one was rolled back alone, inside the shared commit')
  t.same(
    readLog(file).map((r) => r.vault_id),
    [v0, v1],
    'the two good reads are logged, the failed one is not',
  )
})

import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import t from 'tap'
import type { AccessAction, AccessLogEntry } from '@envkeep/env-api-plugin'
import { createSqliteStorage, type SqliteStorage } from '../src/index.js'
import { testLogEntry, TEST_NO_LIMIT, writeTestValue } from '@envkeep/env-api-plugin/testing'

// readVariables commits the reads asked for in one turn of the event loop
// together (group commit). What must still hold for each read: its log
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

t.test('reads asked for together each get their own variables and their own committed entry', async (t) => {
  const { storage, file, vaults } = await setup(t)
  const [v0, v1, v2] = vaults as [string, string, string]
  const asked = [
    [v0, 'development'],
    [v1, 'development'],
    [v2, 'development'],
    [v0, 'preview'],
    [v0, 'development'],
  ] as const
  const seen: number[] = []
  const results = await Promise.all(
    asked.map(([v, env]) =>
      storage.readVariables(v, env, entry(v, env)).then((r) => {
        seen.push(readLog(file).length) // committed by the time this read settles
        return r
      }),
    ),
  )
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

t.test('one read whose entry cannot be written fails alone; the others are answered and logged', async (t) => {
  const { storage, file, vaults } = await setup(t)
  const [v0, v1] = vaults as [string, string]
  const missing = '00000000-0000-4000-8000-0000000000ff' // no such vault: its entry breaks the foreign key
  const outcomes = await Promise.allSettled([
    storage.readVariables(v0, 'development', entry(v0, 'development')),
    storage.readVariables(missing, 'development', entry(missing, 'development')),
    storage.readVariables(v1, 'development', entry(v1, 'development')),
  ])
  t.equal(outcomes[0]?.status, 'fulfilled')
  t.equal(outcomes[1]?.status, 'rejected')
  t.equal(outcomes[2]?.status, 'fulfilled')
  const err = outcomes[1]?.status === 'rejected' ? (outcomes[1].reason as { name?: string; sqlstate?: string }) : {}
  t.equal(err.name, 'StorageError')
  t.equal(err.sqlstate, '23503', 'foreign key violation')
  t.same(
    readLog(file).map((r) => r.vault_id),
    [v0, v1],
    'the two good reads are logged, the failed one is not',
  )
})

t.test('a group commit stops taking reads past 1,000 variables; the rest are answered in the next turn, in order', async (t) => {
  const { storage, file, vaults } = await setup(t)
  const v0 = vaults[0] as string
  for (let i = 0; i < 600; i++) {
    const name = `V${String(i).padStart(4, '0')}`
    await writeTestValue(
      storage,
      { vaultId: v0, environment: 'preview', value: { name, sealed: Buffer.from(name) }, by: OWNER, now: T0, limit: TEST_NO_LIMIT },
      entry(v0, 'preview', 'variable_set'),
    )
  }
  const committedWhenSettled: number[] = []
  const reads = [0, 1, 2].map((i) =>
    storage.readVariables(v0, 'preview', entry(v0, 'preview')).then((r) => {
      committedWhenSettled[i] = readLog(file).length
      return r
    }),
  )
  const results = await Promise.all(reads)
  t.same(
    results.map((r) => r.variables.length),
    [600, 600, 600],
    'each read has every variable',
  )
  t.same(committedWhenSettled, [2, 2, 3], 'the first two shared a commit (1,200 variables); the third had its own, after them')
})

t.test('an environment that was large when last read is read alone, at once, and still logged', async (t) => {
  const { storage, file, vaults } = await setup(t)
  const v0 = vaults[0] as string
  for (let i = 0; i < 1000; i++) {
    const name = `V${String(i).padStart(4, '0')}`
    await writeTestValue(
      storage,
      { vaultId: v0, environment: 'preview', value: { name, sealed: Buffer.from(name) }, by: OWNER, now: T0, limit: TEST_NO_LIMIT },
      entry(v0, 'preview', 'variable_set'),
    )
  }
  t.equal((await storage.readVariables(v0, 'preview', entry(v0, 'preview'))).variables.length, 1000)
  const first = storage.readVariables(v0, 'preview', entry(v0, 'preview'))
  t.equal(readLog(file).length, 2, 'read and committed at once, not held for a group commit')
  const second = storage.readVariables(v0, 'preview', entry(v0, 'preview'))
  t.equal(readLog(file).length, 3, 'the next one too, in its own transaction')
  const results = await Promise.all([first, second])
  t.same(
    results.map((r) => r.variables.length),
    [1000, 1000],
  )
})

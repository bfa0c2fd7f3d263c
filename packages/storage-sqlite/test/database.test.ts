import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { openDatabase } from '../src/database.js'

// synchronous: 2 = FULL, 1 = NORMAL (https://sqlite.org/pragma.html#pragma_synchronous)
t.test('a file database is WAL, commits are on disk before they return (unless asked otherwise), foreign keys on', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'envkeep-db-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const full = await openDatabase({ filename: join(dir, 'full.db') })
  t.teardown(() => full.close())
  t.equal(full.sqlite.pragma('journal_mode', { simple: true }), 'wal')
  t.equal(full.sqlite.pragma('synchronous', { simple: true }), 2, 'FULL by default')
  t.equal(full.sqlite.pragma('foreign_keys', { simple: true }), 1)
  // issue 20, item 5: SQLite's own 2 MiB page cache, not better-sqlite3's 16 MiB (negative: KiB)
  t.equal(full.sqlite.pragma('cache_size', { simple: true }), -2048, 'a 2 MiB page cache')
  const normal = await openDatabase({ filename: join(dir, 'normal.db'), durability: 'normal' })
  t.teardown(() => normal.close())
  t.equal(normal.sqlite.pragma('synchronous', { simple: true }), 1, 'NORMAL when asked')
  const larger = await openDatabase({ filename: join(dir, 'larger.db'), cacheSizeKiB: 8192 })
  t.teardown(() => larger.close())
  t.equal(larger.sqlite.pragma('cache_size', { simple: true }), -8192, 'the size asked')
})

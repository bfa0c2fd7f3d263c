import { fdatasync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openCommitSync } from '../src/commit-sync.js'
import { openDatabase } from '../src/database.js'
import { type SqliteStorage, sqliteStorageOn } from '../src/storage.js'

/**
 * A SQLite store on a real file whose WAL syncs are real `fdatasync`s until `breakSync()`,
 * after which each one fails as a failing disk's would (EIO). Loaded by path by the plugin's
 * route tests (which do not depend on this package), as storage-postgres' plugin-storage.ts is.
 */
export async function createStorageWithBreakableSync(t: { teardown(fn: () => unknown): void }): Promise<{ storage: SqliteStorage; breakSync(): void }> {
  const dir = mkdtempSync(join(tmpdir(), 'envkeep-breakable-sync-'))
  const file = join(dir, 'db.sqlite')
  let broken = false
  // the connection's own sync off: the runner's commits are synced by commit-sync alone
  const opened = await openDatabase({ filename: file, durability: 'normal' })
  const commits = openCommitSync(`${file}-wal`, (fd, done) => {
    if (broken) done(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO', errno: -5, syscall: 'fdatasync' }))
    else fdatasync(fd, done)
  })
  if (!commits) throw new Error('the WAL file could not be opened')
  const close = async () => {
    await opened.close() // closes once
    await commits.close() // closes once
  }
  const storage = sqliteStorageOn({ ...opened, commits, close })
  // after the test's own teardowns (its app first): closing twice is closing once
  t.teardown(async () => {
    await close()
    rmSync(dir, { recursive: true, force: true })
  })
  return {
    storage,
    breakSync: () => {
      broken = true
    },
  }
}

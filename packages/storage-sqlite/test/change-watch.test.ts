import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { runChangeWatchContract } from '@envkeep/env-api-plugin/testing'
import { createSqliteStorage, type SqliteStorage } from '../src/index.js'

// watchChanges (migration 014's counter, polled) and the plugin's caches on SQLite: a second
// store on the same file stands for another process.
t.test('change watch on a SQLite file', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'envkeep-change-watch-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  let n = 0
  runChangeWatchContract(t, async () => {
    const filename = join(dir, `db-${++n}.sqlite`)
    const stores: SqliteStorage[] = [await createSqliteStorage({ filename })]
    return {
      first: stores[0] as SqliteStorage,
      another: async () => {
        const s = await createSqliteStorage({ filename })
        stores.push(s)
        return s
      },
      close: async () => {
        for (const s of stores) await s.close()
      },
    }
  })
})

import t from 'tap'
import { randomUUID } from 'node:crypto'
import { testLogEntry } from '@envkeep/env-api-plugin/testing'
import { withTestDatabase } from '@envkeep/test-support'
import { createPostgresStorage } from '../src/index.js'
import { commitsOf } from './database-stats.js'

// Issue 20, item 2 on PostgreSQL: the access-log entries of concurrent reads are written
// together (one statement, one transaction), and each append answers only once they are
// committed. Counted with the server's own transaction counter for the database.
t.test('concurrent appends share one transaction; one that cannot be written fails alone', async (t) => {
  const url = await withTestDatabase(t)
  if (!url) return
  const store = await createPostgresStorage({ connectionString: url, schema: 'batch', pool: 4 })
  t.teardown(() => store.close())
  const vaultId = randomUUID()
  await store.createVault(
    {
      id: vaultId,
      name: 'shop',
      ownerId: 'p-ana',
      plan: 'self-hosted',
      environments: [{ name: 'development', ownersOnly: false, secondPerson: false }],
      now: new Date(),
    },
    testLogEntry({ vaultId, action: 'vault_created' }),
  )
  const counted = await commitsOf(store)
  const reads = 40
  const { result: done, used } = await counted(() =>
    Promise.all(
      Array.from({ length: reads }, (_, i) => store.appendAccessLog(testLogEntry({ vaultId, action: 'read', environment: 'development', names: [`N${i}`] }))),
    ),
  )
  t.ok(
    done.every((r) => r.ok),
    'every append answered done',
  )
  t.ok(used <= 3, `${reads} appends committed in ${used} transaction(s), not one each`)
  const rows = await store.listAccessLog(vaultId, { action: 'read', limit: 100 })
  t.same(
    rows.map((r) => r.names[0]).reverse(),
    Array.from({ length: reads }, (_, i) => `N${i}`),
    'all written, in the order asked',
  )

  // an entry whose vault is gone cannot be written: it fails, the others of its turn do not
  const results = await Promise.allSettled([
    store.appendAccessLog(testLogEntry({ vaultId, action: 'read', environment: 'development', names: ['GOOD_1'] })),
    store.appendAccessLog(testLogEntry({ vaultId: randomUUID(), action: 'read', environment: 'development', names: ['ORPHAN'] })),
    store.appendAccessLog(testLogEntry({ vaultId, action: 'read', environment: 'development', names: ['GOOD_2'] })),
  ])
  t.same(
    results.map((r) => r.status),
    ['fulfilled', 'rejected', 'fulfilled'],
  )
  const names = (await store.listAccessLog(vaultId, { action: 'read', limit: 100 })).map((r) => r.names[0])
  t.ok(names.includes('GOOD_1') && names.includes('GOOD_2') && !names.includes('ORPHAN'), 'the two good entries are written')
})

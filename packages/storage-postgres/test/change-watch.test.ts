import t from 'tap'
import { randomUUID } from 'node:crypto'
import { runChangeWatchContract, testLogEntry } from '@envkeep/env-api-plugin/testing'
import { withTestDatabase } from '@envkeep/test-support'
import { createPostgresStorage, type PostgresStorage } from '../src/index.js'

// watchChanges (migration 011's counter, NOTIFY and the poll) and the plugin's caches on
// PostgreSQL: a second store on the same schema stands for another process.
t.test('change watch on PostgreSQL', async (t) => {
  const url = await withTestDatabase(t)
  if (!url) return
  let n = 0
  runChangeWatchContract(t, async () => {
    const schema = `w${++n}`
    const open = () => createPostgresStorage({ connectionString: url, schema, pool: 4 })
    const stores: PostgresStorage[] = [await open()]
    return {
      first: stores[0] as PostgresStorage,
      another: async () => {
        const s = await open()
        stores.push(s)
        return s
      },
      close: async () => {
        for (const s of stores) await s.close()
      },
    }
  })
})

t.test('the listener comes back after its connection is lost; the poll hears changes meanwhile', async (t) => {
  const url = await withTestDatabase(t)
  if (!url) return
  const a = await createPostgresStorage({ connectionString: url, schema: 'lost', pool: 2 })
  const b = await createPostgresStorage({ connectionString: url, schema: 'lost', pool: 2 })
  t.teardown(async () => {
    await a.close()
    await b.close()
  })
  let heard = 0
  let wake: (() => void) | null = null
  const stop = b.watchChanges(() => {
    heard++
    wake?.()
  })
  t.teardown(stop)
  const next = (n: number): Promise<void> => {
    if (heard > n) return Promise.resolve()
    const alive = setInterval(() => {}, 1000) // the poll does not hold the process open
    return new Promise<void>((r) => {
      wake = () => {
        if (heard > n) r()
      }
    }).finally(() => clearInterval(alive))
  }
  await next(0) // the first reading
  // every listening connection of the database is ended, as by a restart of the server
  await a.database.pool.query(
    `select pg_terminate_backend(pid) from pg_stat_activity where application_name = 'envkeep-changes' and datname = current_database()`,
  )
  for (let i = 0; i < 2; i++) {
    const seen = heard
    const id = randomUUID()
    await a.createVault(
      { id, name: `v${i}`, ownerId: 'p', plan: 'self-hosted', environments: [{ name: 'development', ownersOnly: false }], now: new Date() },
      testLogEntry({ vaultId: id, action: 'vault_created' }),
    )
    await next(seen)
  }
  t.pass('changes heard after the connection was lost')
})

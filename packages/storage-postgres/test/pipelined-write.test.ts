import t from 'tap'
import pg from 'pg'
import { withTestDatabase } from '@envkeep/test-support'
import { StorageError } from '@envkeep/env-api-plugin'
import { testLogEntry } from '@envkeep/env-api-plugin/testing'
import { createPostgresStorage, type PostgresOptions } from '../src/index.js'
import { push, T0 } from './push-fixture.js'

// A write on PostgreSQL: BEGIN and the statements whose answers the operation does not wait for
// (`ahead`) leave with the next one, COMMIT with the last; the hot ones are named statements.
// Round trips are counted at pg's query API, never timed.

async function vaultIn(storage: Awaited<ReturnType<typeof createPostgresStorage>>, id: string): Promise<void> {
  await storage.createVault(
    { id, name: id, ownerId: 'o', plan: 'p', environments: [{ name: 'development', ownersOnly: false }], now: T0 },
    testLogEntry({ vaultId: id, action: 'vault_created' }),
  )
}

/** A store on a throw-away database with the vaults named (null without a PostgreSQL server), closed after the test. */
async function storeWith(t: Parameters<typeof withTestDatabase>[0], options: Omit<PostgresOptions, 'connectionString'>, vaults: readonly string[]) {
  const url = await withTestDatabase(t)
  if (!url) return null
  const storage = await createPostgresStorage({ connectionString: url, ...options })
  t.teardown(() => storage.close())
  for (const id of vaults) await vaultIn(storage, id)
  return { url, storage }
}

/** What reaches pg's `query` and when its answer comes, in order, while `fn` runs. */
async function recorded(fn: () => Promise<unknown>): Promise<string[]> {
  const events: string[] = []
  const original = pg.Client.prototype.query
  const label = (q: unknown): string => {
    const c = (typeof q === 'string' ? { text: q } : q) as { name?: string; text?: string }
    return c.name ?? (c.text ?? '').trim().split(/\s+/)[0]?.toLowerCase() ?? '?'
  }
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const what = label(args[0])
    events.push(`send ${what}`)
    const answer = (original as (...a: unknown[]) => unknown).apply(this, args)
    if (answer instanceof Promise)
      answer.then(
        () => events.push(`answer ${what}`),
        () => events.push(`failed ${what}`),
      )
    return answer
  } as typeof original
  try {
    await fn()
  } finally {
    pg.Client.prototype.query = original
  }
  return events
}

t.test('a push is two round trips: BEGIN, the lock and the read leave together, then the rows and COMMIT; named statements', async (t) => {
  const made = await storeWith(t, { pool: 2 }, ['v1'])
  if (!made) return
  const { storage } = made
  t.ok((await storage.createImport(push('p0', 'v1'), testLogEntry({ vaultId: 'v1', action: 'push_created' }))).ok, 'a first push (statements prepared)')

  let result: unknown
  const events = await recorded(async () => {
    result = await storage.createImport(push('p1', 'v1'), testLogEntry({ vaultId: 'v1', action: 'push_created' }))
  })
  t.match(result, { ok: true, value: { id: 'p1', status: 'pending', overwrites: [] } })
  const together = events.find((e) => /^send envkeep_together_\d+$/.test(e))?.slice('send '.length)
  t.ok(together, 'the rows, the count and the log entry: one named statement')
  t.same(events, [
    'send begin',
    'send envkeep_lock_vault',
    'send envkeep_push_start',
    'answer begin',
    'answer envkeep_lock_vault',
    'answer envkeep_push_start',
    `send ${together}`,
    'send commit',
    `answer ${together}`,
    'answer commit',
  ])
  const [stored] = await storage.listImports('v1', { limit: 1 })
  t.equal(stored?.id, 'p1', 'committed')
  t.equal((await storage.listAccessLog('v1', { action: 'push_created', limit: 10 })).length, 2, 'with its log entry')
})

t.test('a statement sent ahead that fails fails the write with its own SQLSTATE; nothing of it stays, the client is reused', async (t) => {
  // one connection: the push after the failure runs on the very client that failed
  const made = await storeWith(t, { pool: 1, lockTimeoutMs: 200 }, ['v1'])
  if (!made) return
  const { url, storage } = made
  const holder = new pg.Client({ connectionString: url })
  await holder.connect()
  t.teardown(() => holder.end())
  await holder.query('begin')
  await holder.query(`select id from vaults where id = 'v1' for update`)

  const failed = await storage.createImport(push('p1', 'v1'), testLogEntry({ vaultId: 'v1', action: 'push_created' })).catch((e: unknown) => e)
  t.ok(failed instanceof StorageError)
  t.equal((failed as StorageError).sqlstate, '55P03', 'the lock timed out (not 25P02, the read sent after it)')
  t.equal((failed as StorageError).status, 504, "the spec's 504 server_error for a database that timed out")
  await holder.query('rollback')

  t.same(await storage.listImports('v1', { limit: 10 }), [], 'no push')
  t.same(await storage.listAccessLog('v1', { action: 'push_created', limit: 10 }), [], 'no log entry')
  const again = await storage.createImport(push('p2', 'v1'), testLogEntry({ vaultId: 'v1', action: 'push_created' }))
  t.ok(again.ok, 'the same client pushes again')
  t.equal((await storage.listImports('v1', { limit: 10 })).length, 1)
})

t.test('rows sent ahead that break a rule (a second push of the same id) fail the write with 23505; the first stays alone', async (t) => {
  const made = await storeWith(t, { pool: 1 }, ['v1'])
  if (!made) return
  const { storage } = made
  t.ok((await storage.createImport(push('p1', 'v1'), testLogEntry({ vaultId: 'v1', action: 'push_created' }))).ok)
  const dup = await storage.createImport(push('p1', 'v1'), testLogEntry({ vaultId: 'v1', action: 'push_created' })).catch((e: unknown) => e)
  t.ok(dup instanceof StorageError)
  t.equal((dup as StorageError).sqlstate, '23505')
  t.equal((await storage.listAccessLog('v1', { action: 'push_created', limit: 10 })).length, 1, 'no second log entry')
  const staged = await storage.database.pool.query(`select values_count from staged_usage where vault_id = 'v1'`)
  t.same(staged.rows, [{ values_count: 3 }], 'the staged count of the first push only')
  t.ok((await storage.createImport(push('p2', 'v1'), testLogEntry({ vaultId: 'v1', action: 'push_created' }))).ok, 'and the client goes on')
})

t.test('a push says whether its vault had a webhook; once decided, its enqueue finds one added later', async (t) => {
  const made = await storeWith(t, { pool: 2 }, ['quiet', 'hooked'])
  if (!made) return
  const { storage } = made
  const hook = {
    id: 'w1',
    vaultId: 'hooked',
    url: 'https://hooks.example.com/envkeep',
    format: 'generic' as const,
    events: ['push.created', 'push.decided', 'push.expired'] as const,
    sealedSecret: new Uint8Array(60),
    createdAt: new Date(T0.getTime() - 1000),
    createdBy: 'o',
  }
  t.ok((await storage.changeWebhook({ kind: 'create', webhook: { ...hook, events: [...hook.events] }, most: 10 })).ok)
  const later = new Date(T0.getTime() + 1)

  const quiet = await storage.createImport(push('p1', 'quiet'), testLogEntry({ vaultId: 'quiet', action: 'push_created' }))
  t.equal(quiet.ok && quiet.webhooks, false, 'no webhook: the domain has nothing to enqueue')
  t.same(await storage.enqueueDeliveries({ now: later, since: new Date(0), pushId: 'p1' }), { ok: true, value: 0 }, 'and an enqueue would find none')

  const hooked = await storage.createImport(push('p2', 'hooked'), testLogEntry({ vaultId: 'hooked', action: 'push_created' }))
  t.equal(hooked.ok && hooked.webhooks, true, 'a webhook: the domain enqueues')
  t.same(await storage.enqueueDeliveries({ now: later, since: new Date(0), pushId: 'p2' }), { ok: true, value: 1 }, 'push.created for the webhook')

  // a webhook added after the quiet push: the enqueue once it is decided finds it
  t.ok((await storage.changeWebhook({ kind: 'create', webhook: { ...hook, id: 'w2', vaultId: 'quiet', events: [...hook.events] }, most: 10 })).ok)
  t.ok((await storage.createImport(push('p3', 'quiet'), testLogEntry({ vaultId: 'quiet', action: 'push_created' }))).ok)
  const decided = await storage.decideImport(
    { importId: 'p1', decision: 'rejected', by: 'o', now: later },
    testLogEntry({ vaultId: 'quiet', action: 'push_rejected' }),
  )
  t.ok(decided.ok)
  t.same(
    await storage.enqueueDeliveries({ now: later, since: new Date(0), pushId: 'p1' }),
    { ok: true, value: 2 },
    'push.created and push.decided for the new webhook',
  )
  t.same(await storage.enqueueDeliveries({ now: later, since: new Date(0), pushId: 'p3' }), { ok: true, value: 1 }, 'a push made with the webhook there')
})

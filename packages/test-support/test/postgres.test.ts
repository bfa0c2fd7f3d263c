import t from 'tap'
import pg from 'pg'
import { withTestDatabase, testDatabaseServerUrl } from '@envkeep/test-support'

async function databaseExists(server: string, name: string): Promise<boolean> {
  const c = new pg.Client({ connectionString: server })
  await c.connect()
  try {
    const r = await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])
    return r.rowCount === 1
  } finally {
    await c.end()
  }
}

t.test('withTestDatabase creates a fresh database and drops it in teardown', async (t) => {
  const server = testDatabaseServerUrl()
  let name = ''
  await t.test('inner', async (t) => {
    const url = await withTestDatabase(t)
    if (!url) return
    name = new URL(url).pathname.slice(1)
    t.match(name, /^envkeep_test_[0-9a-f]{16}$/)
    const c = new pg.Client({ connectionString: url })
    await c.connect()
    const r = await c.query<{ db: string }>('SELECT current_database() AS db')
    await c.end()
    t.equal(r.rows[0]?.db, name)
  })
  if (!server) return
  t.equal(await databaseExists(server, name), false, 'dropped after the test')
})

t.test('outside CI, without ENVKEEP_TEST_DATABASE_URL the test is skipped with the reason', async (t) => {
  const saved = { url: process.env.ENVKEEP_TEST_DATABASE_URL, ci: process.env.CI }
  delete process.env.ENVKEEP_TEST_DATABASE_URL
  delete process.env.CI
  t.teardown(() => {
    if (saved.url !== undefined) process.env.ENVKEEP_TEST_DATABASE_URL = saved.url
    if (saved.ci !== undefined) process.env.CI = saved.ci
  })
  let reason = ''
  const url = await withTestDatabase({
    skip: ((m: string) => {
      reason = m ?? ''
    }) as never,
    teardown: () => {},
  })
  t.equal(url, undefined)
  t.match(reason, /ENVKEEP_TEST_DATABASE_URL is not set/)
})

t.test('with CI=true and no database, withTestDatabase fails instead of skipping', async (t) => {
  const saved = { url: process.env.ENVKEEP_TEST_DATABASE_URL, ci: process.env.CI }
  delete process.env.ENVKEEP_TEST_DATABASE_URL
  process.env.CI = 'true'
  t.teardown(() => {
    if (saved.url === undefined) delete process.env.ENVKEEP_TEST_DATABASE_URL
    else process.env.ENVKEEP_TEST_DATABASE_URL = saved.url
    if (saved.ci === undefined) delete process.env.CI
    else process.env.CI = saved.ci
  })
  const skipped: string[] = []
  await t.rejects(
    withTestDatabase({ skip: ((m: string) => void skipped.push(m)) as never, teardown: () => {} }),
    /CI=true and ENVKEEP_TEST_DATABASE_URL is not set/,
  )
  t.same(skipped, [])
})

import { randomBytes } from 'node:crypto'
import pg from 'pg'

/** The part of a tap `Test` that `withTestDatabase` needs. */
export interface TestLike {
  // tap's t.skip has several overloads; only the message form is used
  skip(...args: never[]): unknown
  teardown(fn: () => void | Promise<void>): void
}

/**
 * The superuser URL of a PostgreSQL server that CI (`.ci/run`, via
 * `.ci/postgres.sh`) started, or undefined when none was.
 */
export function testDatabaseServerUrl(): string | undefined {
  const url = process.env.ENVKEEP_TEST_DATABASE_URL
  return url ? url : undefined
}

export const NO_TEST_DATABASE_REASON = 'ENVKEEP_TEST_DATABASE_URL is not set: start a server with `.ci/postgres.sh start DIR` and export the URL it prints'

/**
 * Gives a test a fresh database `envkeep_test_<random>` on the server in
 * `ENVKEEP_TEST_DATABASE_URL`, dropped in the test's teardown. Returns its
 * connection string, or undefined after skipping the test (with the reason)
 * when the variable is unset:
 *
 *   const url = await withTestDatabase(t)
 *   if (!url) return
 */
export async function withTestDatabase(t: TestLike): Promise<string | undefined> {
  const server = testDatabaseServerUrl()
  if (!server) {
    // in CI a missing database is a failure, never a quiet skip of the PostgreSQL tests
    if (process.env.CI === 'true') throw new Error(`CI=true and ${NO_TEST_DATABASE_REASON}`)
    ;(t.skip as (message: string) => void)(NO_TEST_DATABASE_REASON)
    return undefined
  }
  const name = `envkeep_test_${randomBytes(8).toString('hex')}`
  await admin(server, `CREATE DATABASE ${name}`)
  t.teardown(() => admin(server, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
  const url = new URL(server)
  url.pathname = `/${name}`
  return url.toString()
}

async function admin(server: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: server })
  await client.connect()
  try {
    await client.query(sql)
  } finally {
    await client.end()
  }
}

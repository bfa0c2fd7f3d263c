import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import type { Test } from 'tap'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { createSqliteStorage } from '@envkeep/storage-sqlite'
import { createPostgresStorage } from '@envkeep/storage-postgres'
import type { CiIdentityStore, Storage } from '@envkeep/env-api-plugin'
import { withTestDatabase } from '@envkeep/test-support'
import { createPostgresAccountStore } from '../src/accounts/postgres-account-store.js'
import type { AccountStore } from '../src/accounts/account-store.js'
import { createSqliteAccountStore } from '../src/accounts/sqlite-account-store.js'
import type { Keyring } from '@envkeep/env-api-plugin'
import { Capture, freePort } from '@envkeep/test-support'
import { buildApp } from '../src/build-app.js'
import { loadConfig, type Env, type ServerConfig } from '../src/config.js'
import { createLogger } from '../src/logger.js'
import { hashPassword } from '../src/secrets.js'
import { buildCli } from '../src/main.js'

/** A temporary directory removed after the test. */
export function tempDir(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'envkeep-server-test-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

export interface TestApp {
  readonly app: FastifyInstance
  /** SQLite in memory, or PostgreSQL on a fresh database with ENVKEEP_TEST_STORAGE=postgres */
  readonly storage: Storage & CiIdentityStore & { close(): Promise<void> }
  readonly accounts: AccountStore
  readonly config: ServerConfig
  readonly log: Capture
  /** the test's clock; move it with `clock.ms += …` */
  readonly clock: { ms: number }
}

export async function buildTestApp(t: Test, o: { env?: Env; keyring?: Keyring | null; loginAttemptsPerMinute?: number } = {}): Promise<TestApp> {
  const dir = tempDir(t)
  const config = loadConfig({}, { ENVKEEP_DATA_DIR: dir, ...o.env }, dir)
  let storage: TestApp['storage']
  let accounts: AccountStore
  if (process.env.ENVKEEP_TEST_STORAGE === 'postgres') {
    const url = await withTestDatabase(t)
    if (!url) throw new Error('ENVKEEP_TEST_STORAGE=postgres needs ENVKEEP_TEST_DATABASE_URL')
    const pg = await createPostgresStorage({ connectionString: url, pool: 4 })
    storage = pg
    accounts = await createPostgresAccountStore(pg.database)
  } else {
    const sqlite = await createSqliteStorage({ filename: ':memory:' })
    storage = sqlite
    accounts = await createSqliteAccountStore(sqlite.database)
  }
  const log = new Capture()
  const clock = { ms: Date.parse('2026-11-21T12:00:00.000Z') }
  const { app } = await buildApp({
    config,
    storage,
    accounts,
    keyring: o.keyring ?? null,
    logger: createLogger('debug', log),
    now: () => new Date(clock.ms),
    ...(o.loginAttemptsPerMinute === undefined ? {} : { loginAttemptsPerMinute: o.loginAttemptsPerMinute }),
  })
  await app.ready()
  t.teardown(async () => {
    await app.close()
    await storage.close()
  })
  return { app, storage, accounts, config, log, clock }
}

/** Cookies a response sets, as name → value. */
export function setCookies(res: LightMyRequestResponse): Record<string, string> {
  const out: Record<string, string> = {}
  for (const c of res.cookies as { name: string; value: string }[]) out[c.name] = c.value
  return out
}

/** The hidden CSRF token of the first form on a page. */
export function csrfOf(body: string): string {
  const m = /name="_csrf" value="([^"]+)"/.exec(body)
  if (!m) throw new Error('no CSRF field on the page')
  return m[1]!
}

export function cookieHeader(cookies: Record<string, string>): string {
  return Object.entries(cookies)
    .map(([k, v]) => `${k}=${v}`)
    .join('; ')
}

/** A browser-ish session for inject: keeps cookies across requests. */
export function browser(app: FastifyInstance) {
  const jar: Record<string, string> = {}
  return {
    jar,
    async get(url: string) {
      const res = await app.inject({ method: 'GET', url, headers: { cookie: cookieHeader(jar) } })
      Object.assign(jar, setCookies(res))
      return res
    },
    async post(url: string, form: Record<string, string>) {
      const res = await app.inject({
        method: 'POST',
        url,
        headers: { cookie: cookieHeader(jar), 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams(form).toString(),
      })
      Object.assign(jar, setCookies(res))
      return res
    },
  }
}

export async function addAccount(accounts: AccountStore, email: string, password: string, name = 'Test Person') {
  return accounts.createAccount({ id: crypto.randomUUID(), email, name, passwordHash: await hashPassword(password) }, new Date())
}

/** Runs the CLI with fake streams; stdin gets `input`. */
export async function runCli(argv: readonly string[], env: Env, input: string | Buffer = '', cwd = '/') {
  const stdin = new PassThrough()
  stdin.end(input)
  const stdout = new Capture()
  const stderr = new Capture()
  const code = await buildCli({ stdin, stdout, stderr, env, cwd }).run(argv)
  return { code, stdout: stdout.text, stderr: stderr.text }
}

export { Capture, freePort }

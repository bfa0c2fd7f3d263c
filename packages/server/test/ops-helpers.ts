import { randomBytes } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { mintSignIn } from '@envkeep/env-api-plugin/testing'
import { spawnNode, type Spawned } from '@envkeep/test-support'
import type { Test } from 'tap'
import { loadConfig, type Env } from '../src/config.js'
import { openStores } from '../src/stores.js'
import { freePort, runCli } from './helpers.js'

export const BIN = fileURLToPath(new URL('../dist/bin.js', import.meta.url))
export const OWNER = 'owner@example.com'
export const OWNER_PASSWORD = 'canary-owner-password-123'

export function newMasterKey(): string {
  return randomBytes(32).toString('base64url')
}

export interface Seeded {
  readonly vaultId: string
  readonly accountId: string
  /** a CLI sign-in's access token (env:read and env:push), made straight in storage */
  readonly token: string
}

/**
 * An installation as an operator makes one: init, an owner, a vault (`app`), a variable, then
 * a CLI sign-in made straight in storage (as the token endpoint would) for API requests.
 */
export async function seed(env: Env, baseUrl: string): Promise<Seeded> {
  const must = (r: { code: number; stdout: string; stderr: string }) => {
    if (r.code !== 0) throw new Error(`command failed (${r.code}): ${r.stderr}`)
    return r.stdout
  }
  must(await runCli(['init'], env))
  must(await runCli(['admin', 'user', 'create', '--email', OWNER, '--name', 'Owner', '--password-stdin'], env, OWNER_PASSWORD))
  const vault = JSON.parse(must(await runCli(['admin', 'vault', 'create', '--name', 'app', '--owner', OWNER, '--json'], env))) as { vault: { id: string } }
  must(await runCli(['admin', 'var', 'set', '--vault', 'app', '--env', 'development', 'SEEDED_NAME'], env, 'seeded-value'))
  const stores = await openStores(loadConfig({}, env, '/'))
  try {
    const account = await stores.accounts.findAccountByEmail(OWNER)
    if (!account) throw new Error('no owner')
    const s = await mintSignIn(stores.storage, { baseUrl, personId: account.id })
    return { vaultId: vault.vault.id, accountId: account.id, token: s.accessToken }
  } finally {
    await stores.close()
  }
}

/** `envkeep-server start` as a process, stopped (SIGKILL) at the end of the test if still running. */
export async function startServer(t: Test, env: Record<string, string>): Promise<Spawned> {
  const server = spawnNode(BIN, ['start'], { env })
  t.teardown(() => {
    if (server.child.exitCode === null) server.child.kill('SIGKILL')
  })
  await server.waitFor('stdout', /envkeep-server started/)
  return server
}

/** Stops a started server with SIGTERM and returns its exit code. */
export async function stopServer(server: Spawned): Promise<number | null> {
  server.child.kill('SIGTERM')
  return (await server.done).code
}

export { freePort }

/** Signs in on the /login page as a browser would (CSRF token and cookie, Origin); returns the status (303 signed in, 401 wrong). */
export async function signInWithPassword(at: string, origin: string, password: string): Promise<number> {
  const page = await fetch(`${at}/login`)
  const cookie = page.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ')
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await page.text())![1]!
  const res = await fetch(`${at}/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie, origin, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ _csrf: csrf, email: OWNER, password }).toString(),
  })
  return res.status
}

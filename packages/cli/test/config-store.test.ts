import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { CliError } from '../src/errors.js'
import { createConfigStore, resolveConfigDir, writeFileAtomic, type SignIn } from '../src/config-store.js'

async function tempDir(t: { teardown(fn: () => unknown): void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'envkeep-store-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  return dir
}

const signIn = (baseUrl: string, n = 1): SignIn => ({
  baseUrl,
  issuer: baseUrl,
  tokenEndpoint: `${baseUrl}/oauth/token`,
  revocationEndpoint: `${baseUrl}/oauth/revoke`,
  clientId: `${baseUrl}/cli/oauth-client.json`,
  resource: `${baseUrl}/api/env`,
  scope: 'env:read',
  accessToken: `ekat_test${n}`,
  refreshToken: `ekrt_test${n}`,
  accessExpiresAt: 0,
  signedInAt: new Date(0).toISOString(),
})

t.test('config directory: ENVKEEP_CONFIG_DIR, else XDG_CONFIG_HOME/envkeep, else ~/.config/envkeep', async (t) => {
  const cases: Array<[Record<string, string>, string]> = [
    [{ ENVKEEP_CONFIG_DIR: '/a', XDG_CONFIG_HOME: '/x' }, '/a'],
    [{ XDG_CONFIG_HOME: '/x' }, '/x/envkeep'],
    [{ ENVKEEP_CONFIG_DIR: '', XDG_CONFIG_HOME: '' }, '/home/p/.config/envkeep'],
    [{}, '/home/p/.config/envkeep'],
  ]
  for (const [env, want] of cases) t.equal(resolveConfigDir(env, '/home/p'), want, JSON.stringify(env))
})

t.test('sign-ins are stored per base URL in a 0600 file in a 0700 directory, no temp files left', async (t) => {
  const root = await tempDir(t)
  const dir = join(root, 'nested', 'envkeep')
  const store = createConfigStore(dir)
  t.same(await store.read(), { version: 1, current: null, signIns: {} }, 'absent file reads as empty')
  await store.withLock(async (tx) => {
    const f = await tx.read()
    f.signIns['https://a.example'] = signIn('https://a.example', 1)
    f.signIns['https://b.example'] = signIn('https://b.example', 2)
    f.current = 'https://b.example'
    await tx.write(f)
  })
  const f = await store.read()
  t.equal(f.signIns['https://a.example']?.accessToken, 'ekat_test1')
  t.equal(f.signIns['https://b.example']?.refreshToken, 'ekrt_test2')
  t.equal(f.current, 'https://b.example')
  t.equal((await stat(store.file)).mode & 0o777, 0o600)
  t.equal((await stat(dir)).mode & 0o777, 0o700)
  t.same((await readdir(dir)).sort(), ['sign-ins.json'], 'no temp or lock files remain')
})

t.test('writeFileAtomic replaces a wider-mode file with a 0600 one', async (t) => {
  const dir = await tempDir(t)
  const path = join(dir, 'out.env')
  await writeFile(path, 'old', { mode: 0o644 })
  await writeFileAtomic(path, 'new')
  t.equal(await readFile(path, 'utf8'), 'new')
  t.equal((await stat(path)).mode & 0o777, 0o600)
})

t.test('a damaged file is a clear error that says what to do', async (t) => {
  const dir = await tempDir(t)
  const store = createConfigStore(dir)
  for (const text of ['{not json', '{"version": 9, "signIns": {}}', 'null']) {
    await writeFile(store.file, text)
    await t.rejects(store.read(), CliError, text)
  }
})

t.test('the lock serialises read-modify-write: no update is lost, sections never overlap', async (t) => {
  const dir = await tempDir(t)
  // Separate store objects, as separate commands would have.
  const stores = Array.from({ length: 6 }, () => createConfigStore(dir))
  let inside = 0
  let overlapped = false
  await Promise.all(
    stores.flatMap((store, i) =>
      [0, 1, 2].map((j) =>
        store.withLock(async (tx) => {
          inside++
          if (inside > 1) overlapped = true
          const f = await tx.read()
          await new Promise((r) => setImmediate(r))
          f.signIns[`https://s${i}-${j}.example`] = signIn(`https://s${i}-${j}.example`)
          await tx.write(f)
          inside--
        }),
      ),
    ),
  )
  t.equal(overlapped, false)
  t.equal(Object.keys((await stores[0]!.read()).signIns).length, 18, 'all 18 updates are kept')
})

t.test('the lock is released when the section throws', async (t) => {
  const dir = await tempDir(t)
  const store = createConfigStore(dir)
  await t.rejects(
    store.withLock(async () => Promise.reject(new Error('boom'))),
    /boom/,
  )
  t.equal(await store.withLock(async () => 'again'), 'again')
})

import t from 'tap'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { randomBytes, randomUUID } from 'node:crypto'
import { createLocalKeyring } from '@envkeep/env-api-plugin'
import { mintSignIn, storeFirstKey, testLogEntry } from '@envkeep/env-api-plugin/testing'
import { createSqliteStorage } from '@envkeep/storage-sqlite'
import { spawnNode } from '@envkeep/test-support'
import { readKeyFile } from '../src/keyring-file.js'
import { freePort, runCli, tempDir } from './helpers.js'

// Hardening finding 2: a vault whose data key was first made while
// `admin rotate-master-key` ran got it wrapped by the retiring key, and the
// rotation still reported success: every later read was decrypt_failed.
// Here a real server process makes data keys (the first push to a new
// vault) while this process rotates the master key, round after round;
// after each rotation every stored data key must open under the key file.

const BIN = fileURLToPath(new URL('../dist/bin.js', import.meta.url))
const ROUNDS = 3
/** vaults made before: their keys make each rotation's rewrap transaction last a while */
const OLD_VAULTS = 1000
/** keyless vaults per round, each getting its data key from a push sent while the rotation runs (enough for its whole run) */
const NEW_VAULTS = 400
const KEYLESS = [{ name: 'development', ownersOnly: false }] as const

t.test('master-key rotation racing vault creation never leaves a key the new master key cannot open', async (t) => {
  const dir = tempDir(t)
  const data = join(dir, 'data')
  const env = { ENVKEEP_DATA_DIR: data }
  t.equal((await runCli(['init'], env, '', dir)).code, 0)
  const user = await runCli(
    ['admin', 'user', 'create', '--email', 'ana@example.com', '--name', 'Ana', '--password-stdin', '--json'],
    env,
    'canary-race-password-1234',
    dir,
  )
  t.equal(user.code, 0, user.stderr)
  const ana = (JSON.parse(user.stdout.trim()) as { account: { id: string } }).account.id
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const db = join(data, 'envkeep.db')
  /** vaults made straight in storage (keyless unless a key file is given), between rotations */
  async function makeVaults(n: number, withKeyUnder?: Uint8Array): Promise<string[]> {
    const storage = await createSqliteStorage({ filename: db })
    try {
      const ring = withKeyUnder ? createLocalKeyring(withKeyUnder) : null
      const ids: string[] = []
      for (let i = 0; i < n; i++) {
        const id = randomUUID()
        await storage.createVault(
          { id, name: `race-${id.slice(0, 8)}`, ownerId: ana, plan: 'self-hosted', environments: KEYLESS, now: new Date() },
          testLogEntry({ vaultId: id, action: 'vault_created' }),
        )
        if (ring) await storeFirstKey(storage, id, await ring.wrap(randomBytes(32), id))
        ids.push(id)
      }
      return ids
    } finally {
      await storage.close()
    }
  }
  const token = await (async () => {
    const storage = await createSqliteStorage({ filename: db })
    try {
      return (await mintSignIn(storage, { baseUrl: base, personId: ana })).accessToken
    } finally {
      await storage.close()
    }
  })()
  const made = await makeVaults(OLD_VAULTS, readKeyFile(join(data, 'master.key'))!.key)
  const server = spawnNode(BIN, ['start'], {
    cwd: dir,
    env: { ...env, ENVKEEP_PORT: String(port), ENVKEEP_RATE_PER_MINUTE: '100000', ENVKEEP_RATE_PER_DAY: '1000000', ENVKEEP_LOG_LEVEL: 'warn' },
  })
  t.teardown(() => {
    if (server.child.exitCode === null) server.child.kill('SIGKILL')
  })
  // the server is up once it answers (its start line is not logged at level warn)
  for (let i = 0; i < 200; i++) {
    const ok = await fetch(`${base}/api/env/vaults`, { headers: { authorization: `Bearer ${token}` } }).then(
      (r) => r.ok,
      () => false,
    )
    if (ok) break
    await new Promise((resolve) => setTimeout(resolve, 50))
  }

  for (let round = 0; round < ROUNDS; round++) {
    const vaults = await makeVaults(NEW_VAULTS)
    // the first push to each vault makes its data key, in the server process, one after another
    // for as long as the rotation (another process) runs
    let rotating = true
    const rotation = spawnNode(BIN, ['admin', 'rotate-master-key'], { cwd: dir, env }).done.then((r) => {
      rotating = false
      return r
    })
    const statuses: number[] = []
    for (const [i, v] of vaults.entries()) {
      if (!rotating) break
      const res = await fetch(`${base}/api/env/${v}/development/imports`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ variables: { A: `value-${round}-${i}` } }),
      })
      statuses.push(res.status)
    }
    const rotated = await rotation
    t.equal(rotated.code, 0, rotated.stderr)
    t.ok(
      statuses.length > 0 && statuses.every((s) => s === 201),
      `round ${round}: ${statuses.length} pushes stored while rotating (statuses: ${[...new Set(statuses)].join(', ')})`,
    )
    made.push(...vaults)

    const key = readKeyFile(join(data, 'master.key'))!.key
    const ring = createLocalKeyring(key)
    const storage = await createSqliteStorage({ filename: db })
    try {
      const unopened: string[] = []
      for (const v of made) {
        const wrapped = await storage.getWrappedKey(v)
        if (!wrapped) continue
        await ring.unwrap(wrapped, v).catch(() => unopened.push(v))
      }
      t.same(unopened, [], `round ${round}: every data key opens under the master key now in the file`)
    } finally {
      await storage.close()
    }
  }
  const read = await fetch(`${base}/api/env/vaults`, { headers: { authorization: `Bearer ${token}` } })
  t.equal(read.status, 200)
  server.child.kill('SIGTERM')
  await server.done
})

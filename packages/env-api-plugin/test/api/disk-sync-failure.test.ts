import { fileURLToPath, pathToFileURL } from 'node:url'
import t from 'tap'
import { build, expectError } from './helpers.js'
import type { StorageUnderTest } from '../storage-under-test.js'

// Issue 20: on SQLite a read's access-log entry is made durable by a sync of the WAL off the
// event loop (storage-sqlite/src/commit-sync.ts). When that sync fails, the read must fail as the
// spec's "503 server_error: the database is unreachable" (as SQLite's own SQLITE_IOERR_FSYNC
// would), deliver no value, and carry a ref whose full record is in the log; every later
// request that reaches the database fails the same way. The store is storage-sqlite's, on a real
// file, loaded by path (this package does not depend on the storage packages).

const CANARY = 'canary-value-disk-sync-4c1e'

async function breakableStore(t: Tap): Promise<{ storage: StorageUnderTest; breakSync(): void }> {
  const module = fileURLToPath(new URL('../../../storage-sqlite/test/failing-sync-storage.ts', import.meta.url))
  const { createStorageWithBreakableSync } = (await import(pathToFileURL(module).href)) as {
    createStorageWithBreakableSync(t: Tap): Promise<{ storage: StorageUnderTest; breakSync(): void }>
  }
  return createStorageWithBreakableSync(t)
}

type Tap = { teardown(fn: () => unknown): void }

t.test('a read whose access-log sync fails: 503 server_error with a ref, no value; later requests fail alike', async (t) => {
  const { storage, breakSync } = await breakableStore(t)
  const b = await build(t, { storage })
  const v = await b.createVault('alice')
  await b.setValues(v, 'development', { A: CANARY })
  const token = await b.signIn('alice')
  const ok = await b.get(`/api/env/${v}/development`, token)
  t.equal(ok.statusCode, 200, 'read while the disk syncs')
  t.match(ok.json(), { variables: { A: CANARY } })

  breakSync()
  const res = await b.get(`/api/env/${v}/development`, token)
  expectError(t, res, 503, 'server_error', 'env API: database', { vault: v, secrets: [CANARY, 'EIO', 'fdatasync'] })
  const ref = res.json().ref as string
  const line = b.logs.find((l) => l.includes(ref))
  t.ok(line, 'the full record is logged under the ref')
  t.match(JSON.parse(line as string), { ref, status: 503, error: 'server_error', where: 'env API: database' })
  t.notOk(
    b.logs.some((l) => l.includes(CANARY)),
    'no value in the log',
  )

  const again = await b.get(`/api/env/${v}/development`, token)
  expectError(t, again, 503, 'server_error', 'env API: database', { vault: v, secrets: [CANARY] })
})

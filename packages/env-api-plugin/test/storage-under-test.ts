import type { Storage } from '../src/index.js'
import { createMemoryStorage, type MemoryStorage } from '../src/testing/index.js'
import { fileURLToPath, pathToFileURL } from 'node:url'

/**
 * The store the route tests run on: the reference memory store, or, with
 * ENVKEEP_TEST_STORAGE=postgres, @envkeep/storage-postgres on a fresh database (the CI runs the
 * /api/env and OAuth tests both ways). The PostgreSQL store comes from that package's own test
 * module (`createStorageUnderTest(t)` in packages/storage-postgres/test/plugin-storage.ts, or
 * the module `ENVKEEP_TEST_STORAGE_MODULE` names), loaded by path: this package does not
 * depend on the storage packages, which depend on it.
 */
export type StorageUnderTest = Storage & { close(): Promise<void> }

export const ON_POSTGRES = process.env.ENVKEEP_TEST_STORAGE === 'postgres'

export async function storageUnderTest(t: { teardown(fn: () => unknown): void; skip(...a: never[]): unknown }): Promise<StorageUnderTest> {
  if (!ON_POSTGRES) return createMemoryStorage()
  const module = process.env.ENVKEEP_TEST_STORAGE_MODULE ?? fileURLToPath(new URL('../../storage-postgres/test/plugin-storage.ts', import.meta.url))
  const { createStorageUnderTest } = (await import(pathToFileURL(module).href)) as {
    createStorageUnderTest(t: unknown): Promise<StorageUnderTest>
  }
  return createStorageUnderTest(t)
}

/**
 * Raw SQL on the PostgreSQL store (for tampering tests), or null on the memory store. A change
 * behind the store's back reaches the cores' caches as another process's would (issue 20):
 * through `watchChanges`; each query here ends with a notification, and returns once the store's
 * listeners (the cores over it, registered first) have heard it.
 */
export function postgresQuery(storage: Storage): ((text: string, params: unknown[]) => Promise<{ rows: Record<string, unknown>[] }>) | null {
  const pool = (storage as { database?: { pool?: { query(text: string, params?: unknown[]): Promise<{ rows: Record<string, unknown>[] }> } } }).database?.pool
  if (!pool) return null
  return async (text, params) => {
    const r = await pool.query(text, params)
    await changeHeard(storage, () => pool.query("select pg_notify('envkeep_changes', '')"))
    return r
  }
}

/** Runs `send` (which makes a change or signals one) and waits until the store's watch calls its listeners. */
export async function changeHeard(storage: Storage, send: () => Promise<unknown>): Promise<void> {
  const watch = storage.watchChanges
  if (!watch) {
    await send()
    return
  }
  let stop = (): void => {}
  const heard = new Promise<void>((resolve) => {
    stop = watch((): void => resolve())
  })
  try {
    await send()
    await heard
  } finally {
    stop()
  }
}

export function isMemory(storage: Storage): storage is MemoryStorage {
  return typeof (storage as Partial<MemoryStorage>).edit === 'function'
}

/** Makes every later access-log write fail, on either store (the memory probe, or a trigger). */
export async function breakLogWrites(storage: Storage): Promise<void> {
  const q = postgresQuery(storage)
  if (q) {
    await q(`create or replace function test_break_log() returns trigger language plpgsql as $$ begin raise exception 'test: writes broken'; end $$`, [])
    await q('create trigger test_break_log before insert on access_log for each row execute function test_break_log()', [])
    return
  }
  await (storage as MemoryStorage).probe.breakWrites('access_log')
}

/** Turns on a vault's second-person rule, on either store. */
export async function requireSecondPerson(storage: Storage, vaultId: string): Promise<void> {
  const q = postgresQuery(storage)
  if (q) {
    await q('update vaults set require_second_person = true where id = $1', [vaultId])
    return
  }
  await (storage as MemoryStorage).edit((s) => {
    s.vaults.set(vaultId, { ...s.vaults.get(vaultId)!, requireSecondPerson: true })
  })
}

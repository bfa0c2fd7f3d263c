// Fixtures of the vault store contract (../vault-store-contract.ts): times, people, sealed-looking bytes, helpers.
import assert from 'node:assert/strict'
import type { ImportStore } from '../../adapters/import-store.js'
import { randomBytes, randomUUID } from 'node:crypto'
import type {
  AccessAction,
  AccessLogEntry,
  EnvironmentInfo,
  NewImport,
  SealedVariable,
  StorageLimit,
  VariableMeta,
  VaultStore,
} from '../../adapters/storage.js'
import type { ChangeEntry, ChangeSetDetail, ChangeSetSummary, HistoryStore } from '../../adapters/history-store.js'
import type { VariableWrite } from '../write-value.js'
import type { MakeVaultStore, VaultStoreFixture } from './types.js'

// ---- fixtures -----------------------------------------------------------------

export const T0 = new Date('2026-11-21T10:00:00.000Z')
export const MINUTE = 60_000
export const DAY = 24 * 60 * MINUTE
export const OWNER = 'person-owner'
export const EDITOR = 'person-editor'
export const STRANGER = 'person-stranger'
export const LIMIT: StorageLimit = { maxVariables: 10_000, maxBytes: 20 * 1024 * 1024 }
export const ENVS: readonly EnvironmentInfo[] = [
  { name: 'production', ownersOnly: true },
  { name: 'development', ownersOnly: false },
  { name: 'preview', ownersOnly: false },
]

export const at = (ms: number): Date => new Date(T0.getTime() + ms)

/** Sealed-looking bytes: random, so a stored value can be compared byte for byte. */
export function sealed(n = 40): Uint8Array {
  return new Uint8Array(randomBytes(n))
}

export function sv(name: string, n?: number): SealedVariable {
  return { name, sealed: sealed(n) }
}

export function entry(vaultId: string, action: AccessAction, over: Partial<AccessLogEntry> = {}): AccessLogEntry {
  return {
    vaultId,
    at: T0,
    personId: OWNER,
    signInId: 'sign-in-1',
    clientId: 'https://envkeep.test/cli/oauth-client.json',
    action,
    environment: 'development',
    names: [],
    address: '127.0.0.1',
    subject: null,
    detail: null,
    ...over,
  }
}

/** A VariableWrite with the default limit (`over` sets expect or limit). */
export function put(
  vaultId: string,
  environment: string,
  value: SealedVariable,
  by: string | null,
  now: Date,
  over: Partial<VariableWrite> = {},
): VariableWrite {
  return { vaultId, environment, value, by, now, limit: LIMIT, ...over }
}

export async function withStore(make: MakeVaultStore, fn: (f: VaultStoreFixture) => Promise<void>): Promise<void> {
  const f = await make()
  try {
    await fn(f)
  } finally {
    await f.close()
  }
}

export async function newVault(store: VaultStore, over: { name?: string; environments?: readonly EnvironmentInfo[] } = {}): Promise<string> {
  const id = randomUUID()
  await store.createVault(
    {
      id,
      name: over.name ?? `vault-${id.slice(0, 8)}`,
      ownerId: OWNER,
      plan: 'self-hosted',
      environments: over.environments ?? ENVS,
      now: T0,
    },
    entry(id, 'vault_created', { environment: null }),
  )
  return id
}

export function newImport(vaultId: string, values: readonly SealedVariable[], over: Partial<NewImport> = {}): NewImport {
  return {
    id: randomUUID(),
    vaultId,
    environment: 'development',
    senderId: EDITOR,
    signInId: 'sign-in-2',
    values,
    refused: [],
    createdAt: T0,
    expiresAt: at(7 * DAY),
    limit: LIMIT,
    ...over,
  }
}

/** One stored value (sealed), or null: `readCurrent` of that one name (not logged). */
export async function storedValue(store: HistoryStore, vaultId: string, environment: string, name: string): Promise<SealedVariable | null> {
  return (await store.readCurrent(vaultId, environment, { names: [name] })).variables[0] ?? null
}

/**
 * Deletes one variable as the domain does: the environment as it is now,
 * then `changeVariables` guarded by that version, with a one-entry change
 * set. An absent name changes nothing: `{ ok: false, reason: 'absent' }`.
 */
export async function deleteValue(
  store: HistoryStore,
  input: { vaultId: string; environment: string; name: string; by: string | null; now: Date },
  log: AccessLogEntry,
): Promise<{ ok: boolean; reason?: string }> {
  const { version, variables } = await store.readCurrent(input.vaultId, input.environment, { names: [input.name] })
  const was = variables.find((v) => v.name === input.name)
  if (!was) return { ok: false, reason: 'absent' }
  const r = await store.changeVariables(
    {
      vaultId: input.vaultId,
      environment: input.environment,
      set: [],
      delete: [input.name],
      ifVersion: version,
      by: input.by,
      now: input.now,
      limit: LIMIT,
      changeSet: {
        id: randomUUID(),
        vaultId: input.vaultId,
        environment: input.environment,
        at: input.now,
        by: input.by,
        how: 'page',
        ref: null,
        entries: [{ name: input.name, kind: 'deleted', before: was.sealed, after: null }],
      },
    },
    log,
  )
  return r.ok ? { ok: true } : { ok: false, reason: r.reason }
}

/**
 * Waits for a signal from the store (`probe.lockWaiters()`, say): asks
 * again after each turn of the event loop, and fails the case if it never
 * comes. No timer decides whether a race is run.
 */
export async function signalled(ready: () => Promise<boolean>, what: string, turns = 100_000): Promise<void> {
  for (let i = 0; i < turns; i++) {
    if (await ready()) return
    await new Promise<void>((resolve) => setImmediate(resolve))
  }
  assert.fail(`no signal from the store: ${what}`)
}

/** Byte-for-byte equality that never prints the bytes (sealed values stay out of test output). */
export function same(a: Uint8Array | null | undefined, b: Uint8Array | null | undefined, message?: string): void {
  assert.ok(a && b, message ?? 'bytes present')
  assert.ok(Buffer.from(a).equals(Buffer.from(b)), message ?? 'the same bytes')
}

/** Names of what the store returned, so a failing assertion never prints sealed bytes. */
export const namesOf = (vs: readonly SealedVariable[]): string[] => vs.map((v) => v.name)

export async function rejectsWith(p: Promise<unknown>, sqlstate: string, message?: string): Promise<Error & { sqlstate: string }> {
  let caught: unknown
  await p.then(
    () => assert.fail(message ?? `expected a StorageError ${sqlstate}`),
    (err: unknown) => {
      caught = err
    },
  )
  const e = caught as Error & { sqlstate: string }
  assert.equal(e.name, 'StorageError', message ?? 'a StorageError')
  assert.equal(e.sqlstate, sqlstate, message)
  return e
}

/** One vault as the person sees it (`listVaults` with its id), or null. */
export async function getVault(store: Pick<VaultStore, 'listVaults'>, vaultId: string, personId: string) {
  return (await store.listVaults(personId, { vaultId }))[0] ?? null
}

// ---- the reads the contract merged (issue 19), as the domain makes them ---------------

/** The staged values of a push (`getImport` with `values: true`, at a time no push has expired by). */
export async function stagedValues(store: Pick<ImportStore, 'getImport'>, importId: string): Promise<readonly SealedVariable[]> {
  return (await store.getImport(importId, new Date(0), { values: true }))?.values ?? []
}

/** Names and metadata of an environment's variables (`readCurrent` with `values: false`). */
export async function variableMetas(store: HistoryStore, vaultId: string, environment: string): Promise<VariableMeta[]> {
  return (await store.readCurrent(vaultId, environment, { values: false })).variables
}

/**
 * A read as the domain makes it: `readCurrent`, then `appendAccessLog` of
 * `log` naming exactly what was read. If the entry cannot be written, this
 * throws (the domain then answers nothing).
 */
export async function readLogged(
  store: VaultStore & ImportStore & HistoryStore,
  vaultId: string,
  environment: string,
  log: AccessLogEntry,
  names?: readonly string[],
): Promise<{ version: number; variables: SealedVariable[] }> {
  const r = await store.readCurrent(vaultId, environment, names === undefined ? {} : { names })
  await store.appendAccessLog({ ...log, names: r.variables.map((v) => v.name) })
  return r
}

/** One change set with its entries, or null (`listChangeSets` by `id`). */
export async function changeSetById(store: HistoryStore, vaultId: string, id: string): Promise<ChangeSetDetail | null> {
  return (await store.listChangeSets(vaultId, { id, entries: true, limit: 1 }))[0] ?? null
}

/** The versions of one variable, newest first (`listChangeSets` by `name`, with entries). */
export async function versionsOf(
  store: HistoryStore,
  vaultId: string,
  environment: string,
  name: string,
  limit: number,
): Promise<{ changeSet: ChangeSetSummary; entry: ChangeEntry }[]> {
  const sets = await store.listChangeSets(vaultId, { environment, name, entries: true, limit })
  return sets.flatMap(({ entries, ...changeSet }) => entries.map((entry) => ({ changeSet, entry })))
}

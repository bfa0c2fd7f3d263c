import { randomUUID } from 'node:crypto'
import type { HistoryStore } from '../adapters/history-store.js'
import type { AccessLogEntry, OverLimit, SealedVariable, StaleKey, StorageLimit } from '../adapters/vault-store.js'

/** One value written to an environment by a test (what the domain's writes boil down to). */
export interface VariableWrite {
  readonly vaultId: string
  readonly environment: string
  readonly value: SealedVariable
  /** the person writing; `null` for the server administrator */
  readonly by: string | null
  readonly now: Date
  readonly limit: StorageLimit
  /** `new`: refuse (`exists`) if the name has a value; `existing`: refuse (`absent`) if not; `any` (default) */
  readonly expect?: 'new' | 'existing' | 'any'
  /** the wrapped data key the value was sealed under (stale → `stale_key`) */
  readonly sealedUnder?: Uint8Array
}

export type WriteValueResult =
  | { readonly ok: true; readonly created: boolean }
  | { readonly ok: false; readonly reason: 'exists' | 'absent' }
  | OverLimit
  | StaleKey

/** Attempts before a write that keeps losing to other writers gives up (the domain's retry does the same). */
const ATTEMPTS = 20

/**
 * Writes one variable the way the domain does: the environment as it is now
 * (`readCurrent`), then `changeVariables` guarded by that version with a
 * one-entry change set, again if another writer changed the environment
 * meanwhile. The storage limit and `sealedUnder` are checked by the store
 * inside its transaction; `expect` here, against the version read. For
 * tests and fixtures: the contract has no single-value write.
 */
export async function writeTestValue(store: HistoryStore, write: VariableWrite, log: AccessLogEntry): Promise<WriteValueResult> {
  for (let attempt = 1; ; attempt++) {
    const { version, variables } = await store.readCurrent(write.vaultId, write.environment, { names: [write.value.name] })
    const before = variables[0]?.sealed ?? null
    if (write.expect === 'new' && before) return { ok: false, reason: 'exists' }
    if (write.expect === 'existing' && !before) return { ok: false, reason: 'absent' }
    const r = await store.changeVariables(
      {
        vaultId: write.vaultId,
        environment: write.environment,
        set: [write.value],
        delete: [],
        ifVersion: version,
        by: write.by,
        now: write.now,
        limit: write.limit,
        ...(write.sealedUnder ? { sealedUnder: write.sealedUnder } : {}),
        changeSet: {
          id: randomUUID(),
          vaultId: write.vaultId,
          environment: write.environment,
          at: write.now,
          by: write.by,
          how: write.by === null ? 'admin' : 'page',
          ref: null,
          entries: [
            {
              name: write.value.name,
              kind: before ? 'changed' : 'added',
              before: before ? Uint8Array.from(before) : null,
              after: Uint8Array.from(write.value.sealed),
            },
          ],
        },
      },
      log,
    )
    if (r.ok) return { ok: true, created: before === null }
    if (r.reason === 'stale_key') return { ok: false, reason: 'stale_key' }
    if (r.reason === 'storage_limit') return r
    if (attempt >= ATTEMPTS) throw new Error('writeTestValue: the environment kept changing')
  }
}

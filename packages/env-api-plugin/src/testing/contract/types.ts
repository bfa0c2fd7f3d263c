import type { HistoryStore } from '../../adapters/history-store.js'
import type { ImportStore } from '../../adapters/import-store.js'
import type { VaultStore } from '../../adapters/vault-store.js'

/**
 * The contract every vault store must meet (adapters/vault-store.ts), as
 * plain async cases that throw (node:assert), so any runner can drive them.
 * With tap: `runVaultStoreContract(t, makeStore)`.
 *
 * `makeStore` returns a fresh, empty store, a `close` for it and a `probe`
 * that looks at the stored data directly instead of trusting the store's
 * own answers (and can make chosen writes fail, to check that what must be
 * atomic is). Every backend supplies one: no case is skipped.
 */
export interface VaultStoreFixture {
  /** the vault store with its history half (changes of values go through `changeVariables`) */
  readonly store: VaultStore & ImportStore & HistoryStore
  readonly probe: VaultStoreProbe
  close(): Promise<void>
}

/** A direct look into the backing data, bypassing the store. */
export interface VaultStoreProbe {
  /** staged (sealed) values stored for a push, whatever its status */
  stagedValueCount(importId: string): Promise<number>
  /** variables stored for an environment */
  variableCount(vaultId: string, environment: string): Promise<number>
  /** pushes stored for a vault, whatever their status */
  importCount(vaultId: string): Promise<number>
  /** access log entries stored for a vault */
  accessLogCount(vaultId: string): Promise<number>
  /**
   * Makes every later write into `what` fail (for `variables` and
   * `import_values`, only the rows named `name` when given) until the
   * returned function is called.
   */
  breakWrites(what: 'access_log' | 'variables' | 'import_values', name?: string): Promise<() => Promise<void>>
  /**
   * How many changes wait right now for a lock another change holds (the
   * store's write lock, a row lock): the signal a race case waits for
   * before letting the holder go, so the race is run every time.
   */
  lockWaiters(): Promise<number>
}

export type MakeVaultStore = () => Promise<VaultStoreFixture>

export interface VaultStoreContractCase {
  readonly name: string
  run(make: MakeVaultStore): Promise<void>
}

/**
 * The subset of tap's `t` the runner uses. `pass` takes a required message:
 * tap's `pass(...[msg, extra]: MessageExtra)` does not accept an explicit
 * `undefined` message, so `message?: string` would make tap's `Test` not
 * assignable to this interface.
 */
export interface ContractRunner {
  test(name: string, fn: (t: ContractRunner) => Promise<void>): unknown
  pass(message: string): unknown
}

import type { VaultSecrets, VaultStore } from '../adapters/vault-store.js'

/**
 * Test helpers over the data-key half of the contract (`swapWrappedKey`),
 * doing what the domain does (vault-service.ts) without a keyring.
 */

/** Stores a vault's first data key (compare-and-set from none); answers the key the vault has after it. */
export async function storeFirstKey(store: Pick<VaultStore, 'swapWrappedKey' | 'getWrappedKey'>, vaultId: string, key: Uint8Array): Promise<Uint8Array> {
  await store.swapWrappedKey({ kind: 'key', vaultId, expect: null, next: key })
  const stored = await store.getWrappedKey(vaultId)
  if (!stored) throw new Error('storeFirstKey: no key stored')
  return stored
}

/**
 * A data-key rotation as the domain runs it: reads the vault's secrets,
 * lets `reseal` seal them again, swaps them in. False without a key; a
 * throw of `reseal` changes nothing; `changed` is thrown (a test has no writer racing it).
 */
export async function resealForTest(
  store: Pick<VaultStore, 'readVaultSecrets' | 'swapWrappedKey'>,
  vaultId: string,
  reseal: (current: VaultSecrets) => Promise<VaultSecrets>,
): Promise<boolean> {
  const current = await store.readVaultSecrets(vaultId)
  if (!current) return false
  const r = await store.swapWrappedKey({ kind: 'reseal', vaultId, expect: current, next: await reseal(current) })
  if (!r.ok && r.reason === 'changed') throw new Error('resealForTest: the vault changed meanwhile')
  return r.ok
}

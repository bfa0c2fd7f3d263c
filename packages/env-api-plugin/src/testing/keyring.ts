import { createHash } from 'node:crypto'
import type { Keyring } from '../adapters/keyring.js'
import { createLocalKeyring } from '../crypto/local-keyring.js'

/**
 * A keyring for tests and examples: a local AES-256-GCM keyring whose
 * 32-byte master key is derived from a label, so two keyrings made from the
 * same label open each other's data keys and different labels never do.
 */
export function createTestKeyring(label = 'envkeep test master key'): Keyring {
  return createLocalKeyring(createHash('sha256').update(label, 'utf8').digest())
}

/** A keyring whose unwrap always fails, as with a wrong or broken KMS. */
export function createBrokenKeyring(inner: Keyring = createTestKeyring()): Keyring {
  return {
    wrap: (dataKey, vaultId) => inner.wrap(dataKey, vaultId),
    unwrap: async () => {
      throw new Error('unwrap refused')
    },
  }
}

import type { Keyring } from '../adapters/keyring.js'
import { open, seal } from './seal.js'

const WRAP_PLACE = 'envkeep data key v1:'

/**
 * A keyring over a local 32-byte master key: data keys are wrapped with
 * AES-256-GCM, bound to their vault id. A KMS-backed keyring can replace it.
 */
export function createLocalKeyring(masterKey: Uint8Array): Keyring {
  if (!(masterKey instanceof Uint8Array) || masterKey.length !== 32) {
    throw new TypeError('envkeep: the master key must be 32 bytes')
  }
  const key = Buffer.from(masterKey) // private copy
  return Object.freeze({
    async wrap(dataKey: Uint8Array, vaultId: string): Promise<Uint8Array> {
      return seal(key, dataKey, Buffer.from(WRAP_PLACE + vaultId, 'utf8'))
    },
    async unwrap(wrapped: Uint8Array, vaultId: string): Promise<Uint8Array> {
      return open(key, wrapped, Buffer.from(WRAP_PLACE + vaultId, 'utf8'))
    },
  })
}

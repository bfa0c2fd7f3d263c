/**
 * Wraps and unwraps per-vault data keys under a master key (or a KMS).
 * Rotating the master key re-wraps data keys without touching values.
 */
export interface Keyring {
  /** Wraps a 32-byte data key for a vault. */
  wrap(dataKey: Uint8Array, vaultId: string): Promise<Uint8Array>
  /**
   * Unwraps a data key. Throws when it cannot (wrong master key, tampered
   * bytes); the plugin answers that as 500 `decrypt_failed`.
   */
  unwrap(wrapped: Uint8Array, vaultId: string): Promise<Uint8Array>
  /**
   * Optional, for a keyring whose key can change while the server runs (a
   * master-key rotation): whether `wrapped` opens under the key `wrap` uses
   * now, with no fallback to an older one. A data key made while the key
   * changed is wrapped again under the new one (vault-service.ts), so a
   * rotation never misses a key stored after its last pass.
   */
  isCurrent?(wrapped: Uint8Array, vaultId: string): Promise<boolean>
}

/** Envelope encryption lives in the domain layer (domain/vault-crypto.ts); re-exported for existing imports. */
export { createVaultCrypto, rotateDataKey, type HistoryValues, type SealedHistory, type VaultCrypto, type VaultCryptoOptions } from './domain/vault-crypto.js'
export { MAX_NAME_LENGTH, MAX_VALUE_BYTES, NAME_RE, nameProblem, RESERVED_PREFIX, valueProblem } from './domain/rules.js'

import type { AccessLogEntry, StorageLimit } from '../adapters/vault-store.js'

/**
 * An access-log entry for tests and seed scripts that write through storage
 * directly: the given fields, everything else null (no person, sign-in,
 * client, address, subject or detail), `names` empty, `at` now.
 */
export function testLogEntry(e: Partial<AccessLogEntry> & Pick<AccessLogEntry, 'vaultId' | 'action'>): AccessLogEntry {
  return {
    at: new Date(),
    personId: null,
    signInId: null,
    clientId: null,
    environment: null,
    names: [],
    address: null,
    subject: null,
    detail: null,
    ...e,
  }
}

/** A storage limit no test reaches. */
export const TEST_NO_LIMIT: StorageLimit = Object.freeze({ maxVariables: Number.MAX_SAFE_INTEGER, maxBytes: Number.MAX_SAFE_INTEGER })

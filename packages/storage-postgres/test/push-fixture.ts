import type { NewImport } from '@envkeep/env-api-plugin'

export const T0 = new Date('2026-11-26T12:00:00Z')

/** A push of A, B and C (three bytes each) into `vaultId`'s development environment, made at T0, within any limit. */
export function push(id: string, vaultId: string): NewImport {
  return {
    id,
    vaultId,
    environment: 'development',
    senderId: 'o',
    signInId: null,
    values: ['A', 'B', 'C'].map((name) => ({ name, sealed: new Uint8Array([1, 2, 3]) })),
    refused: [],
    createdAt: T0,
    expiresAt: new Date(T0.getTime() + 60_000),
    limit: { maxVariables: 1e6, maxBytes: 1e9 },
  }
}

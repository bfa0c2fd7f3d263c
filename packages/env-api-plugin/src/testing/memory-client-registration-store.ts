import type { ClientRegistration, ClientRegistrationStore } from '../adapters/client-registration-store.js'
import type { ChangeResult } from '../adapters/results.js'

/** The reference client registration store: one map, copies in and out. */
export class MemoryClientRegistrationStore implements ClientRegistrationStore {
  readonly #rows = new Map<string, ClientRegistration>()

  async saveClientRegistration(r: ClientRegistration): Promise<ChangeResult<never>> {
    this.#rows.set(r.clientId, copy(r))
    return { ok: true, value: undefined }
  }

  async findClientRegistration(clientId: string): Promise<ClientRegistration | null> {
    const r = this.#rows.get(clientId)
    return r ? copy(r) : null
  }
}

function copy(r: ClientRegistration): ClientRegistration {
  return Object.freeze({
    clientId: r.clientId,
    kind: r.kind,
    name: r.name,
    redirectUris: Object.freeze([...r.redirectUris]),
    createdAt: new Date(r.createdAt),
    expiresAt: r.expiresAt && new Date(r.expiresAt),
  })
}

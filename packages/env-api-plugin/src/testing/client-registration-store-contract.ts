import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import type { ClientRegistration, ClientRegistrationStore } from '../adapters/client-registration-store.js'

/** The client registration half of the contract (adapters/client-registration-store.ts). */
export interface ClientRegistrationFixture {
  readonly store: Required<ClientRegistrationStore>
  close(): Promise<void>
}

const T0 = new Date('2026-11-21T10:00:00.000Z')

function registration(over: Partial<ClientRegistration> = {}): ClientRegistration {
  return {
    clientId: randomUUID(),
    kind: 'registered',
    name: 'Cursor <b>',
    redirectUris: ['cursor://anysphere.cursor-mcp/oauth/callback', 'http://localhost:8787/callback'],
    createdAt: T0,
    expiresAt: new Date(T0.getTime() + 86_400_000),
    ...over,
  }
}

async function withStore(make: () => Promise<ClientRegistrationFixture>, fn: (s: Required<ClientRegistrationStore>) => Promise<void>): Promise<void> {
  const f = await make()
  try {
    await fn(f.store)
  } finally {
    await f.close()
  }
}

export const clientRegistrationStoreContract: readonly {
  readonly name: string
  run(make: () => Promise<ClientRegistrationFixture>): Promise<void>
}[] = [
  {
    name: 'client registrations: saved, found exactly, replaced whole, unknown is null',
    run: (make) =>
      withStore(make, async (s) => {
        const r = registration()
        assert.deepEqual(await s.saveClientRegistration(r), { ok: true, value: undefined })
        assert.deepEqual(await s.findClientRegistration(r.clientId), r)
        assert.equal(await s.findClientRegistration(randomUUID()), null)
        const doc = registration({
          clientId: 'https://client.example/oauth.json',
          kind: 'document',
          expiresAt: null,
          redirectUris: ['http://127.0.0.1/callback'],
        })
        await s.saveClientRegistration(doc)
        assert.deepEqual(await s.findClientRegistration(doc.clientId), doc)
        const kept = { ...r, expiresAt: null, name: 'Cursor' }
        await s.saveClientRegistration(kept)
        assert.deepEqual(await s.findClientRegistration(r.clientId), kept, 'a second save replaces the record')
        assert.deepEqual(await s.findClientRegistration(doc.clientId), doc, 'and leaves the others alone')
      }),
  },
]

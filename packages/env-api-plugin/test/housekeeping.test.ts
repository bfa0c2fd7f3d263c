import { randomUUID } from 'node:crypto'
import Fastify from 'fastify'
import t from 'tap'
import envApi from '../src/index.js'
import { Capture } from '@envkeep/test-support'
import { createMemoryStorage, testLogEntry } from '../src/testing/index.js'

t.test('the plugin expires pending pushes past their end on its own, from start, for any host', async (t) => {
  const storage = createMemoryStorage()
  t.teardown(() => storage.close())
  const now = new Date('2026-11-21T12:00:00.000Z')
  const vaultId = randomUUID()
  await storage.createVault(
    { id: vaultId, name: 'shop', ownerId: 'p-ana', plan: 'self-hosted', environments: [{ name: 'development', ownersOnly: false }], now },
    testLogEntry({ vaultId: vaultId, action: 'vault_created' }),
  )
  const push = (id: string, expiresAt: Date) =>
    storage.createImport(
      {
        id,
        vaultId,
        environment: 'development',
        senderId: 'p-ana',
        signInId: null,
        values: [{ name: 'A', sealed: new Uint8Array(40) }],
        refused: [],
        createdAt: new Date(now.getTime() - 7_200_000),
        expiresAt,
        limit: { maxVariables: 100, maxBytes: 1_000_000 },
      },
      testLogEntry({
        vaultId,
        at: now,
        personId: 'p-ana',
        signInId: null,
        clientId: null,
        action: 'push_created',
        environment: 'development',
        names: ['A'],
        address: null,
      }),
    )
  const ended = randomUUID()
  const live = randomUUID()
  await push(ended, new Date(now.getTime() - 1))
  await push(live, new Date(now.getTime() + 60_000))

  const log = new Capture()
  const app = Fastify({ logger: { level: 'info', stream: log } })
  await app.register(envApi, {
    baseUrl: 'https://envkeep.example',
    storage,
    keyring: null,
    people: { currentPerson: async () => null, signInUrl: () => '/login', getPerson: async () => null, findPersonByEmail: async () => null },
    now: () => now,
  })
  await app.ready()
  await app.close() // waits for a housekeeping run under way

  // as stored, without reading the push (a read would expire it itself)
  const rows = await storage.listImports(vaultId, { limit: 10 })
  t.same(Object.fromEntries(rows.map((r) => [r.id, r.status])), { [ended]: 'expired', [live]: 'pending' }, 'without anyone reading the push')
  t.match(log.text, /"expired":1,"msg":"expired pending pushes"/)
})

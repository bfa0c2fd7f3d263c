import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import Fastify from 'fastify'
import t from 'tap'
import envApi, { decideImport } from '@envkeep/env-api-plugin'
import { createTestKeyring, mintSignIn, testLogEntry } from '@envkeep/env-api-plugin/testing'
import { createSqliteStorage } from '@envkeep/storage-sqlite'
import { tempDir } from './helpers.js'

// Moved from the plugin's tests (which run on the memory store) to where
// SQLite is: the server's database file never holds a plaintext value.

const CANARY = 'CANARY-plaintext-9e4b2a71c3'
const BASE_URL = 'https://envkeep.example'

/** Every file of the directory (main, WAL, shared memory) that holds the needle, in plain or UTF-16 forms. */
function fileBytesContain(dir: string, needle: string): string[] {
  const forms = [Buffer.from(needle, 'utf8'), Buffer.from(needle, 'utf16le'), Buffer.from(needle.slice(0, 12), 'utf8')]
  return readdirSync(dir).filter((f) => {
    const bytes = readFileSync(join(dir, f))
    return forms.some((form) => bytes.includes(form))
  })
}

t.test('the SQLite file (WAL included) never holds a plaintext value', async (t) => {
  const dir = tempDir(t)
  const storage = await createSqliteStorage({ filename: join(dir, 'envkeep.db') })
  const logs: string[] = []
  const app = Fastify({ logger: { level: 'debug', stream: { write: (line: string) => void logs.push(line) } } })
  const keyring = createTestKeyring()
  await app.register(envApi, {
    baseUrl: BASE_URL,
    storage,
    keyring,
    people: { currentPerson: async () => null, signInUrl: () => '/login', getPerson: async () => null, findPersonByEmail: async () => null },
  })
  await app.ready()
  t.teardown(async () => {
    await app.close()
    await storage.close()
  })
  const v = '3f2a9c1e-0000-4000-8000-000000000001'
  await storage.createVault(
    {
      id: v,
      name: 'shop',
      ownerId: 'alice',
      plan: 'self-hosted',
      environments: [
        { name: 'development', ownersOnly: false },
        { name: 'preview', ownersOnly: false },
      ],
      now: new Date(),
    },
    testLogEntry({ vaultId: v, action: 'vault_created' }),
  )
  const { accessToken } = await mintSignIn(storage, { baseUrl: BASE_URL, personId: 'alice' })
  const headers = { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json' }
  const push = (environment: string, variables: Record<string, string>) =>
    app.inject({ method: 'POST', url: `/api/env/${v}/${environment}/imports`, headers, payload: { variables } })
  const applied = await push('development', { PUSHED: `${CANARY}-pushed`, UNICODE: `${CANARY}-ünï` })
  t.equal(applied.statusCode, 201)
  // applied twice over: the first values are kept in history (sealed), as must be every copy
  t.equal(
    (
      await decideImport(storage, {
        importId: (await push('development', { PUSHED: `${CANARY}-first` })).json().import,
        decision: 'applied',
        personId: 'alice',
        now: new Date(),
        keyring,
      })
    ).outcome,
    'decided',
  )
  t.equal((await push('preview', { STAGED: `${CANARY}-staged` })).statusCode, 201, 'a pending push: staged values')
  t.equal(
    (await decideImport(storage, { importId: applied.json().import, decision: 'applied', personId: 'alice', now: new Date(), keyring })).outcome,
    'decided',
  )
  const read = await app.inject({ url: `/api/env/${v}/development`, headers })
  t.same(Object.keys(read.json().variables), ['PUSHED', 'UNICODE'], 'the values are there and readable')

  const files = readdirSync(dir)
  t.ok(
    files.some((f) => f.endsWith('-wal')),
    'the WAL file exists and is searched too',
  )
  t.same(fileBytesContain(dir, CANARY), [], 'no file holds the canary')
  t.ok(fileBytesContain(dir, 'PUSHED').length > 0, 'the search finds what is stored in plain (names), so it can fail')
  storage.database.sqlite.pragma('wal_checkpoint(TRUNCATE)')
  t.same(fileBytesContain(dir, CANARY), [], 'nor after a checkpoint')
  t.notOk(
    logs.some((l) => l.includes(CANARY)),
    'nor the server log',
  )
})

import { randomBytes, randomUUID } from 'node:crypto'
import Fastify, { type FastifyInstance, type FastifyRequest, type LightMyRequestResponse } from 'fastify'
import envApi, { type EnvApiOptions } from '../../src/index.js'
import type { Keyring } from '../../src/adapters/keyring.js'
import type { PeopleAdapter, Person } from '../../src/adapters/people.js'
import type { RefusedLine, StorageLimit } from '../../src/adapters/storage.js'
import type { Storage } from '../../src/adapters/storage.js'
import { createLocalKeyring } from '../../src/crypto/local-keyring.js'
import { createVaultCrypto } from '../../src/vault-service.js'
import { DEFAULT_ENVIRONMENTS } from '../../src/pages/vaults.js'
import { createMemoryStorage, testLogEntry } from '../../src/testing/index.js'
import { freePort } from '@envkeep/test-support'

export const PEOPLE: Readonly<Record<string, Person>> = Object.freeze({
  owner: { id: 'p-owner', email: 'olga@example.test', name: 'Olga Owner' },
  editor: { id: 'p-editor', email: 'ed@example.test', name: 'Ed Editor' },
  viewer: { id: 'p-viewer', email: 'vic@example.test', name: 'Vic Viewer' },
  outsider: { id: 'p-outsider', email: 'oscar@example.test', name: 'Oscar Outsider' },
  hostile: { id: 'p-hostile', email: 'h@example.test', name: '<img src=x onerror=alert(1)>' },
})

/**
 * A people adapter for tests: the person is named by the header
 * `x-test-person` or the cookie `test_person` (an id of PEOPLE).
 */
export function createTestPeople(): PeopleAdapter {
  const byId = new Map(Object.values(PEOPLE).map((p) => [p.id, p]))
  function sessionOf(request: FastifyRequest): string | null {
    const header = request.headers['x-test-person']
    const cookie = /(?:^|;\s*)test_person=([^;]+)/.exec(request.headers.cookie ?? '')?.[1]
    return (typeof header === 'string' ? header : cookie) ?? null
  }
  return {
    async currentPerson(request: FastifyRequest) {
      const id = sessionOf(request)
      return (id && byId.get(id)) || null
    },
    sessionBinding: sessionOf,
    signInUrl(returnTo: string) {
      return `/login?return_to=${encodeURIComponent(returnTo)}`
    },
    async getPerson(id: string) {
      return byId.get(id) ?? null
    },
    async findPersonByEmail(email: string) {
      return [...byId.values()].find((p) => p.email.toLowerCase() === email.toLowerCase()) ?? null
    },
  }
}

export interface Clock {
  now: Date
}

export interface Built {
  readonly app: FastifyInstance
  /** `http://127.0.0.1:<port>` after `listen: true` (the base URL the plugin was given), else '' */
  readonly address: string
  readonly storage: Storage & { close(): Promise<void> }
  readonly clock: Clock
  readonly logs: string[]
  /** a vault with owner, editor and viewer members */
  readonly vaultId: string
  /** the keyring the plugin was given */
  readonly keyring: Keyring
  seal(environment: string, values: Record<string, string>): Promise<{ name: string; sealed: Uint8Array }[]>
  /** the environment's values now, opened (not logged: a test's look into the store) */
  current(environment: string): Promise<Record<string, string>>
  push(environment: string, values: Record<string, string>, refused?: RefusedLine[], sender?: string): Promise<string>
}

const T0 = new Date('2026-11-21T12:00:00.000Z')
export const TTL = 7 * 24 * 60 * 60 * 1000

/** A ready app with the plugin on the memory store, a vault with three members; closed at teardown. */
export async function build(
  t: { teardown(fn: () => unknown): void },
  opts: {
    vaultName?: string
    baseUrl?: string
    /** listen on 127.0.0.1 at a free port, with that address as the base URL (for real browsers) */
    listen?: boolean
    noKey?: boolean
    /** default: the reference memory store */
    storage?: Storage & { close(): Promise<void> }
    plans?: Record<string, StorageLimit>
    /** default: createTestPeople() */
    people?: PeopleAdapter
    /** more plugin options */
    plugin?: Partial<EnvApiOptions>
  } = {},
): Promise<Built> {
  const port = opts.listen ? await freePort() : 0
  const storage = opts.storage ?? createMemoryStorage()
  const keyring = createLocalKeyring(randomBytes(32))
  const clock: Clock = { now: T0 }
  const logs: string[] = []
  const app = Fastify({
    logger: {
      level: 'info',
      stream: { write: (line: string) => void logs.push(line) },
    },
  })
  await app.register(envApi, {
    baseUrl: opts.listen ? `http://127.0.0.1:${port}` : (opts.baseUrl ?? 'http://127.0.0.1'),
    storage,
    keyring: opts.noKey ? null : keyring,
    people: opts.people ?? createTestPeople(),
    now: () => clock.now,
    importTtlMs: TTL,
    ...(opts.plans ? { plans: opts.plans } : {}),
    ...opts.plugin,
  })
  t.teardown(async () => {
    await app.close()
    await storage.close()
  })
  const vaultId = randomUUID()
  await storage.createVault(
    {
      id: vaultId,
      name: opts.vaultName ?? 'Acme',
      ownerId: PEOPLE.owner!.id,
      plan: 'self-hosted',
      environments: DEFAULT_ENVIRONMENTS,
      now: T0,
    },
    testLogEntry({ vaultId: vaultId, action: 'vault_created' }),
  )
  await storage.changeMember(
    { kind: 'set', vaultId: vaultId, personId: PEOPLE.editor!.id, role: 'editor' },
    testLogEntry({ vaultId: vaultId, action: 'member_added', subject: PEOPLE.editor!.id, detail: 'editor' }),
  )
  await storage.changeMember(
    { kind: 'set', vaultId: vaultId, personId: PEOPLE.viewer!.id, role: 'viewer' },
    testLogEntry({ vaultId: vaultId, action: 'member_added', subject: PEOPLE.viewer!.id, detail: 'viewer' }),
  )
  await app.ready()
  const address = opts.listen ? await app.listen({ host: '127.0.0.1', port }) : ''
  const crypto = createVaultCrypto(storage, keyring)
  return {
    app,
    address,
    storage,
    clock,
    logs,
    vaultId,
    keyring,
    seal: (environment, values) => crypto.sealValues(vaultId, environment, values),
    current: async (environment) => crypto.openValues(vaultId, environment, (await storage.readCurrent(vaultId, environment)).variables),
    async push(environment, values, refused = [], sender = PEOPLE.editor!.id) {
      const id = randomUUID()
      const sealed = await crypto.sealValues(vaultId, environment, values)
      const now = clock.now
      const r = await storage.createImport(
        {
          id,
          vaultId,
          environment,
          senderId: sender,
          signInId: null,
          values: sealed,
          refused,
          createdAt: now,
          expiresAt: new Date(now.getTime() + TTL),
          limit: { maxVariables: 10_000, maxBytes: 20 * 1024 * 1024 },
        },
        testLogEntry({
          vaultId,
          at: now,
          personId: sender,
          signInId: null,
          clientId: null,
          action: 'push_created',
          environment,
          names: Object.keys(values),
          address: null,
        }),
      )
      if (!r.ok) throw new Error('push over limit')
      return id
    },
  }
}

/** A browser-like session of one person: keeps cookies, reads the CSRF token from pages. */
export function session(app: FastifyInstance, who: string | null) {
  const cookies = new Map<string, string>()
  if (who) cookies.set('test_person', PEOPLE[who]!.id)
  let token = ''
  function cookieHeader(): string {
    return [...cookies].map(([k, v]) => `${k}=${v}`).join('; ')
  }
  function keep(res: LightMyRequestResponse): void {
    for (const c of res.cookies) cookies.set(c.name, c.value)
    const m = /name="_csrf" value="([^"]+)"/.exec(res.body)
    if (m) token = m[1]!
  }
  return {
    cookies,
    get token() {
      return token
    },
    async get(url: string) {
      const res = await app.inject({ method: 'GET', url, headers: { cookie: cookieHeader() } })
      keep(res)
      return res
    },
    /** POSTs a form with the session's CSRF token (unless `csrf: false`). */
    async post(url: string, fields: Record<string, string>, o: { csrf?: boolean | string } = {}) {
      const body = new URLSearchParams(fields)
      if (o.csrf !== false) body.set('_csrf', typeof o.csrf === 'string' ? o.csrf : token)
      const res = await app.inject({
        method: 'POST',
        url,
        headers: { cookie: cookieHeader(), 'content-type': 'application/x-www-form-urlencoded' },
        payload: body.toString(),
      })
      keep(res)
      return res
    },
  }
}

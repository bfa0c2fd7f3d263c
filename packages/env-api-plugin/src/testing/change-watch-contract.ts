import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import Fastify, { type FastifyInstance } from 'fastify'
import type { Storage } from '../adapters/storage.js'
import { createEnvkeepCore, type EnvkeepCore } from '../core.js'
import { ADMINISTRATOR, personActor } from '../domain/actor.js'
import envApi from '../index.js'
import { createTestKeyring } from './keyring.js'
import { testLogEntry } from './log-entry.js'
import { mintSignIn } from './sign-in.js'
import type { ContractRunner } from './vault-store-contract.js'

/**
 * `watchChanges` (issue 20), on a backend's whole storage: a change made by
 * another store on the same database is heard, and every change the core's
 * caches depend on is seen by the very next request through the core that
 * made it, and through a second core over the second store once its watch
 * has spoken. No timing: each step awaits a signal.
 *
 * `open()` gives a fresh database's first store and a way to open another
 * store on the same database (another process's, as far as the caches can
 * tell); the memory store, which is its own database, gives itself.
 */
export interface ChangeWatchFixture {
  readonly first: Storage
  another(): Promise<Storage>
  close(): Promise<void>
}

export type OpenChangeWatch = () => Promise<ChangeWatchFixture>

const BASE_URL = 'https://envkeep.example'
const people = {
  currentPerson: async () => null,
  signInUrl: () => '/login',
  getPerson: async () => null,
  findPersonByEmail: async (email: string) => ({ id: `p-${email.split('@')[0]}`, email, name: email }),
}

/** Counts a store's signals; `after(n)` resolves once more than n were heard. */
function signals(storage: Storage): { readonly count: number; after(n: number): Promise<void>; stop(): void } {
  assert.equal(typeof storage.watchChanges, 'function', 'the store has watchChanges')
  let count = 0
  let waiters: { n: number; resolve: () => void }[] = []
  const stop = (storage.watchChanges as NonNullable<Storage['watchChanges']>)(() => {
    count++
    const ready = waiters.filter((w) => count > w.n)
    waiters = waiters.filter((w) => count <= w.n)
    for (const w of ready) w.resolve()
  })
  return {
    get count() {
      return count
    },
    after: (n) => {
      if (count > n) return Promise.resolve()
      // the stores' polls do not hold the process open (unref): this wait does, until it is heard
      const alive = setInterval(() => {}, 1000)
      return new Promise<void>((resolve) => waiters.push({ n, resolve })).finally(() => clearInterval(alive))
    },
    stop,
  }
}

export function runChangeWatchContract(t: ContractRunner, open: OpenChangeWatch): void {
  t.test('a change made by another store on the same database is heard by the watch', async (t) => {
    const f = await open()
    try {
      const second = await f.another()
      const heard = signals(second)
      try {
        // two changes, two signals: a watch may speak once when it starts, so at least one was a change heard
        for (let i = 1; i <= 2; i++) {
          const seen = heard.count
          const id = randomUUID()
          await f.first.createVault(
            { id, name: `watch-${i}`, ownerId: 'p-ana', plan: 'self-hosted', environments: [{ name: 'development', ownersOnly: false }], now: new Date() },
            testLogEntry({ vaultId: id, action: 'vault_created' }),
          )
          await heard.after(seen)
        }
      } finally {
        heard.stop()
      }
      t.pass('heard')
      const stop = (f.first.watchChanges as NonNullable<Storage['watchChanges']>)(() => {})
      stop()
      t.pass('a listener stops')
    } finally {
      await f.close()
    }
  })

  t.test('every change the caches depend on is seen by the next request, here and through a second core', async (t) => {
    const f = await open()
    const apps: FastifyInstance[] = []
    const cores: EnvkeepCore[] = []
    try {
      const keyring = createTestKeyring()
      const serve = async (storage: Storage): Promise<{ app: FastifyInstance; core: EnvkeepCore }> => {
        const core = createEnvkeepCore({ storage, keyring, people })
        const app = Fastify()
        await app.register(envApi, { baseUrl: BASE_URL, storage, keyring, people, core })
        await app.ready()
        apps.push(app)
        cores.push(core)
        return { app, core }
      }
      const second = await f.another()
      const a = await serve(f.first)
      const b = await serve(second)
      const heard = signals(second)
      const { domain } = a.core

      const vault = await domain.createVault(ADMINISTRATOR, { name: 'shop', ownerId: 'p-ana' })
      await domain.addMember(ADMINISTRATOR, { vaultId: vault.id, email: 'bo@example.com', role: 'editor' })
      await domain.writeVariable(ADMINISTRATOR, { vaultId: vault.id, environment: 'development', name: 'API_URL', value: 'canary-1', mode: 'set' })
      const ana = await mintSignIn(f.first, { baseUrl: BASE_URL, personId: 'p-ana' })
      const bo = await mintSignIn(f.first, { baseUrl: BASE_URL, personId: 'p-bo' })
      const read = (app: FastifyInstance, token: string) =>
        app.inject({ method: 'GET', url: `/api/env/${vault.id}/development`, headers: { authorization: `Bearer ${token}` } })

      /** `change` through core A, then: A's next request shows it; B's does once B's watch has spoken (the caches warmed first). */
      const step = async (what: string, token: string, change: () => Promise<unknown>, expect: (status: number, body: string) => boolean) => {
        for (const x of [a, b]) {
          const warm = await read(x.app, token)
          assert.equal(expect(warm.statusCode, warm.body), false, `${what}: the state before differs`)
        }
        const seen = heard.count
        await change()
        const here = await read(a.app, token)
        assert.ok(expect(here.statusCode, here.body), `${what}: the next request through the same core (${here.statusCode})`)
        // B: a watch may speak once without a change, so a few signals may be needed; never a wait by time
        let last = seen
        for (let i = 0; ; i++) {
          await heard.after(last)
          last = heard.count
          const there = await read(b.app, token)
          if (expect(there.statusCode, there.body)) break
          assert.ok(i < 3, `${what}: the second core still answers ${there.statusCode} after ${i + 1} signals`)
        }
        t.pass(what)
      }
      const has = (value: string) => (s: number, body: string) => s === 200 && body.includes(value)
      const status = (want: number) => (s: number) => s === want

      await step(
        'a value change',
        ana.accessToken,
        () => domain.writeVariable(ADMINISTRATOR, { vaultId: vault.id, environment: 'development', name: 'API_URL', value: 'canary-2', mode: 'set' }),
        has('canary-2'),
      )
      await step(
        'a key rotation (values still read, with the new key)',
        ana.accessToken,
        async () => {
          await domain.rotateDataKey(ADMINISTRATOR, vault.id)
          await domain.writeVariable(ADMINISTRATOR, { vaultId: vault.id, environment: 'development', name: 'API_URL', value: 'canary-3', mode: 'set' })
        },
        has('canary-3'),
      )
      await step(
        'environment rules (development owners-only: the editor is refused)',
        bo.accessToken,
        () => domain.setEnvironmentRules(ADMINISTRATOR, { vaultId: vault.id, environment: 'development', ownersOnly: true }),
        status(403),
      )
      await step(
        'environment rules back (the editor reads)',
        bo.accessToken,
        () => domain.setEnvironmentRules(ADMINISTRATOR, { vaultId: vault.id, environment: 'development', ownersOnly: false }),
        status(200),
      )
      await step(
        'a role change (editor to viewer)',
        bo.accessToken,
        () => domain.changeRole(ADMINISTRATOR, { vaultId: vault.id, personId: 'p-bo', role: 'viewer' }),
        status(403),
      )
      await step('a membership ended', bo.accessToken, () => domain.removeMember(ADMINISTRATOR, { vaultId: vault.id, personId: 'p-bo' }), status(404))
      const ana2 = await mintSignIn(f.first, { baseUrl: BASE_URL, personId: 'p-ana' })
      await step(
        'a sign-out (one sign-in revoked)',
        ana2.accessToken,
        () => domain.revokeSignIn(personActor({ personId: 'p-ana' }), ana2.signInId),
        status(401),
      )
      await step(
        'a revocation at /oauth/revoke',
        ana.accessToken,
        () =>
          a.app.inject({
            method: 'POST',
            url: '/oauth/revoke',
            payload: { token: ana.accessToken, client_id: `${BASE_URL}/cli/oauth-client.json` },
          }),
        status(401),
      )

      const ci = await domain.addCiIdentity(ADMINISTRATOR, {
        vaultId: vault.id,
        name: 'deploy',
        issuer: 'github',
        audience: BASE_URL,
        subjectPattern: 'repo:acme/shop:*',
        role: 'editor',
      })
      const ciSignIn = await mintSignIn(f.first, { baseUrl: BASE_URL, personId: `ci:${ci.id}`, scopes: ['env:read'] })
      await step(
        'a CI identity removed',
        ciSignIn.accessToken,
        () => domain.removeCiIdentity(ADMINISTRATOR, { vaultId: vault.id, identity: ci.id }),
        (s) => s === 401 || s === 404,
      )

      const ana3 = await mintSignIn(f.first, { baseUrl: BASE_URL, personId: 'p-ana' })
      await step('a vault deleted', ana3.accessToken, () => domain.deleteVault(ADMINISTRATOR, { vaultId: vault.id, confirmName: 'shop' }), status(404))
      heard.stop()
    } finally {
      for (const app of apps) await app.close()
      for (const core of cores) core.close()
      await f.close()
    }
  })
}

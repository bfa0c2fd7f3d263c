import { createHash, randomUUID } from 'node:crypto'
import Fastify, { type FastifyInstance, type LightMyRequestResponse } from 'fastify'
import type { Test } from 'tap'
import envApi, { createVaultCrypto, type EnvApiOptions, type Keyring, type Role, type Storage } from '../../src/index.js'
import { createTestKeyring } from '../../src/testing/keyring.js'
import { mintSignIn } from '../../src/testing/sign-in.js'
import { testLogEntry, TEST_NO_LIMIT, writeTestValue, type MemoryStorage } from '../../src/testing/index.js'
import { isMemory, postgresQuery, storageUnderTest, type StorageUnderTest } from '../storage-under-test.js'

export const BASE_URL = 'https://envkeep.example'
export const CLI_CLIENT = `${BASE_URL}/cli/oauth-client.json`
export const RESOURCE = `${BASE_URL}/api/env`
export const WWW_AUTHENTICATE = `Bearer realm="envkeep", resource_metadata="${BASE_URL}/.well-known/oauth-protected-resource/api/env"`
export const T0 = new Date('2026-11-21T12:00:00.000Z')

type Tap = { teardown(fn: () => unknown): void }

export interface BuildOptions {
  keyring?: Keyring | null
  /** a store to use (and leave open), e.g. to reopen the same data under another key; default a fresh store (memory, or PostgreSQL with ENVKEEP_TEST_STORAGE=postgres) */
  storage?: StorageUnderTest
  /** wraps the storage the plugin sees (failure injection); tests still see the real one */
  wrapStorage?: (s: Storage) => Storage
  extra?: Partial<EnvApiOptions>
  /** runs on the host app before the plugin is registered (host hooks, plugins) */
  host?: (app: FastifyInstance) => void | Promise<void>
}

export interface Built {
  app: FastifyInstance
  storage: StorageUnderTest
  keyring: Keyring | null
  /** every log line the app wrote, raw JSON */
  logs: string[]
  clock: { now: Date }
  /** mints a CLI sign-in for a person through the OAuth store; returns its access token */
  signIn(personId: string, o?: { scopes?: string[]; clientId?: string; resource?: string; tokenTtlMs?: number }): Promise<string>
  createVault(ownerId: string, o?: { name?: string; members?: Record<string, Role>; plan?: string }): Promise<string>
  setValues(vaultId: string, environment: string, values: Record<string, string>, by?: string): Promise<void>
  get(url: string, token: string | null, headers?: Record<string, string>): Promise<LightMyRequestResponse>
  push(vaultId: string, environment: string, token: string | null, body: unknown): Promise<LightMyRequestResponse>
}

/** A ready app with the plugin on the reference memory store, closed at teardown (the store too, unless given). */
export async function build(t: Tap, o: BuildOptions = {}): Promise<Built> {
  const storage = o.storage ?? (await storageUnderTest(t as never))
  const keyring = o.keyring === undefined ? createTestKeyring() : o.keyring
  const logs: string[] = []
  const clock = { now: new Date(T0) }
  const app = Fastify({ logger: { level: 'debug', stream: { write: (line: string) => void logs.push(line) } } })
  if (o.host) await o.host(app)
  await app.register(envApi, {
    baseUrl: BASE_URL,
    storage: o.wrapStorage ? o.wrapStorage(storage) : storage,
    keyring,
    people: {
      currentPerson: async () => null,
      signInUrl: (returnTo: string) => `/login?return_to=${encodeURIComponent(returnTo)}`,
      getPerson: async () => null,
      findPersonByEmail: async () => null,
    },
    now: () => clock.now,
    ...o.extra,
  })
  await app.ready()
  t.teardown(async () => {
    await app.close()
    if (!o.storage) await storage.close()
  })
  const seal = keyring ? createVaultCrypto(storage, keyring) : null

  const built: Built = {
    app,
    storage,
    keyring,
    logs,
    clock,
    async signIn(personId, so = {}) {
      const minted = await mintSignIn(storage, {
        baseUrl: BASE_URL,
        personId,
        now: clock.now,
        ...(so.scopes ? { scopes: so.scopes } : {}),
        ...(so.clientId ? { clientId: so.clientId } : {}),
        ...(so.resource ? { resource: so.resource } : {}),
        ...(so.tokenTtlMs ? { tokenTtlMs: so.tokenTtlMs } : {}),
      })
      return minted.accessToken
    },
    async createVault(ownerId, vo = {}) {
      const id = randomUUID()
      await storage.createVault(
        {
          id,
          name: vo.name ?? `vault-${id.slice(0, 4)}`,
          ownerId,
          plan: vo.plan ?? 'self-hosted',
          environments: [
            { name: 'development', ownersOnly: false },
            { name: 'preview', ownersOnly: false },
            { name: 'production', ownersOnly: true },
          ],
          now: clock.now,
        },
        testLogEntry({ vaultId: id, action: 'vault_created' }),
      )
      for (const [person, role] of Object.entries(vo.members ?? {}))
        await storage.changeMember(
          { kind: 'set', vaultId: id, personId: person, role: role },
          testLogEntry({ vaultId: id, action: 'member_added', subject: person, detail: role }),
        )
      return id
    },
    async setValues(vaultId, environment, values, by = 'seed') {
      if (!seal) throw new Error('no keyring to seal with')
      for (const v of await seal.sealValues(vaultId, environment, values)) {
        await writeTestValue(
          storage,
          { vaultId: vaultId, environment: environment, value: v, by: by, now: clock.now, limit: TEST_NO_LIMIT },
          testLogEntry({
            vaultId,
            at: clock.now,
            personId: by,
            signInId: null,
            clientId: null,
            action: 'variable_set',
            environment,
            names: [v.name],
            address: null,
          }),
        )
      }
    },
    get(url, token, headers = {}) {
      return app.inject({ method: 'GET', url, headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers } })
    },
    push(vaultId, environment, token, body) {
      return app.inject({
        method: 'POST',
        url: `/api/env/${vaultId}/${environment}/imports`,
        headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), 'content-type': 'application/json' },
        payload: typeof body === 'string' ? body : JSON.stringify(body),
      })
    },
  }
  return built
}

export function sha256(s: string): string {
  return createHash('sha256').update(s, 'utf8').digest('hex')
}

/** A storage whose `method` throws what `fail` makes, everything else passing through. */
export function failing(method: keyof Storage, fail: () => unknown): (s: Storage) => Storage {
  return (s) =>
    new Proxy(s, {
      get(target, p, r) {
        if (p === method)
          return async () => {
            throw fail()
          }
        return Reflect.get(target, p, r)
      },
    })
}

/**
 * The checks every API answer must pass: JSON, `cache-control: no-store,
 * private`, no CORS header; for errors the four fields, the code, the
 * `where`, a ref, the message form, and nothing echoed of `secrets`.
 */
export function expectApi(t: Test, res: LightMyRequestResponse, secrets: readonly string[] = []): void {
  t.equal(res.headers['cache-control'], 'no-store, private', 'cache-control')
  t.match(String(res.headers['content-type']), /^application\/json/, 'content-type JSON')
  t.notOk(
    Object.keys(res.headers).some((h) => h.toLowerCase().startsWith('access-control-')),
    'no CORS headers',
  )
  const all = JSON.stringify(res.headers) + res.body
  for (const s of secrets) t.notOk(all.includes(s), 'nothing sent is echoed')
}

export function expectError(
  t: Test,
  res: LightMyRequestResponse,
  status: number,
  error: string,
  where: string,
  o: { secrets?: readonly string[]; vault?: string; message?: RegExp } = {},
): void {
  t.equal(res.statusCode, status, `status ${status}`)
  expectApi(t, res, o.secrets)
  const body = res.json() as Record<string, unknown>
  t.equal(body.error, error, 'error code')
  t.equal(body.where, where, 'where')
  t.match(body.ref, /^[0-9A-HJKMNP-TV-Z]{10}$/, 'ref')
  t.match(body.message, /^[a-z][^:]*: \S/, 'message is "<operation>: <reason>"')
  if (o.vault) t.match(body.message, new RegExp(`^[^:]*vault ${o.vault.slice(0, 8)}[^:]*: `), 'message names the vault by 8 chars')
  if (o.message) t.match(body.message, o.message)
  t.equal(Object.keys(body).sort().join(','), 'error,message,ref,where', 'exactly the four fields')
}

/** Breaking a stored value behind the adapter's back: each makes the next read fail with decrypt_failed. */
export const tamper = {
  /** flips one bit of a sealed value (in its ciphertext) */
  flipByte(storage: Storage, vaultId: string, name: string): Promise<void> {
    return editVariable(storage, vaultId, name, (sealed) => {
      const s = new Uint8Array(sealed)
      s[s.length - 20] = (s[s.length - 20] as number) ^ 1
      return s
    })
  },
  /** puts the sealed bytes of one variable in another's row */
  async copySealed(storage: Storage, vaultId: string, from: string, to: string): Promise<void> {
    const bytes = await sealedOf(storage, vaultId, from)
    if (!bytes) throw new Error('tamper: no such variable')
    await editVariable(storage, vaultId, to, () => bytes)
  },
  /** copies a variable's row to another environment, sealed bytes unchanged */
  async copyToEnvironment(storage: Storage, vaultId: string, name: string, toEnvironment: string): Promise<void> {
    const q = postgresQuery(storage)
    if (q) {
      await q(
        `insert into variables (vault_id, environment, name, sealed, updated_at, updated_by) select vault_id, $3, name, sealed, updated_at, updated_by from variables where vault_id = $1 and name = $2 limit 1
         on conflict (vault_id, environment, name) do update set sealed = excluded.sealed`,
        [vaultId, name, toEnvironment],
      )
      return
    }
    const m = storage as MemoryStorage
    await m.edit((st) => {
      for (const [key, vars] of st.variables) {
        const row = key.startsWith(`${vaultId}\0`) ? vars.get(name) : undefined
        if (!row) continue
        const target = `${vaultId}\0${toEnvironment}`
        const into = new Map(st.variables.get(target) ?? [])
        into.set(name, row)
        st.variables.set(target, into)
        return
      }
    })
  },
  /** replaces a variable's sealed bytes */
  setSealed(storage: Storage, vaultId: string, name: string, sealed: Uint8Array): Promise<void> {
    return editVariable(storage, vaultId, name, () => sealed)
  },
  /** flips one bit of a vault's wrapped data key */
  async flipWrappedKey(storage: Storage, vaultId: string): Promise<void> {
    const q = postgresQuery(storage)
    if (q) {
      const r = await q('select wrapped_key from vaults where id = $1', [vaultId])
      const k = r.rows[0]?.wrapped_key as Buffer | null | undefined
      if (!k) throw new Error('tamper: no wrapped key')
      const next = Buffer.from(k)
      next[20] = (next[20] as number) ^ 0xff
      await q('update vaults set wrapped_key = $2 where id = $1', [vaultId, next])
      return
    }
    await (storage as MemoryStorage).edit((st) => {
      const v = st.vaults.get(vaultId)
      if (!v?.wrappedKey) throw new Error('tamper: no wrapped key')
      const k = new Uint8Array(v.wrappedKey)
      k[20] = (k[20] as number) ^ 0xff
      st.vaults.set(vaultId, { ...v, wrappedKey: k })
    })
  },
}

async function sealedOf(storage: Storage, vaultId: string, name: string): Promise<Uint8Array | undefined> {
  const q = postgresQuery(storage)
  if (q) return (await q('select sealed from variables where vault_id = $1 and name = $2 limit 1', [vaultId, name])).rows[0]?.sealed as Buffer | undefined
  let bytes: Uint8Array | undefined
  await (storage as MemoryStorage).edit((st) => {
    for (const [key, vars] of st.variables) if (key.startsWith(`${vaultId}\0`) && vars.has(name)) bytes = vars.get(name)!.sealed
  })
  return bytes
}

async function editVariable(storage: Storage, vaultId: string, name: string, change: (sealed: Uint8Array) => Uint8Array): Promise<void> {
  const q = postgresQuery(storage)
  if (q) {
    const rows = (await q('select environment, sealed from variables where vault_id = $1 and name = $2', [vaultId, name])).rows
    for (const r of rows)
      await q('update variables set sealed = $4 where vault_id = $1 and environment = $2 and name = $3', [
        vaultId,
        r.environment,
        name,
        Buffer.from(change(new Uint8Array(r.sealed as Buffer))),
      ])
    return
  }
  if (!isMemory(storage)) throw new Error('tamper: unknown store')
  await storage.edit((st) => {
    for (const [key, vars] of st.variables) {
      const row = key.startsWith(`${vaultId}\0`) ? vars.get(name) : undefined
      if (row) vars.set(name, { ...row, sealed: change(row.sealed) })
    }
  })
}

import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify'
import * as oauth from 'oauth4webapi'
import { freePort } from '@envkeep/test-support'
import envApi, { type EnvApiOptions, type PeopleAdapter, type Person, type Storage } from '../../src/index.js'
import { storageUnderTest, type StorageUnderTest } from '../storage-under-test.js'

type Tap = { teardown(fn: () => unknown): void }

export const T0 = new Date('2026-11-21T12:00:00.000Z')
export const DAY = 86_400_000

export const PEOPLE: Readonly<Record<string, Person>> = Object.freeze({
  ada: { id: 'p-ada', email: 'ada@example.test', name: 'Ada Lovelace' },
  bob: { id: 'p-bob', email: 'bob@example.test', name: 'Bob <b>Builder</b>' },
})

/** The person is named by the cookie `test_person` (an id of PEOPLE). */
export function createTestPeople(): PeopleAdapter {
  const byId = new Map(Object.values(PEOPLE).map((p) => [p.id, p]))
  return {
    async currentPerson(request: FastifyRequest) {
      const id = /(?:^|;\s*)test_person=([^;]+)/.exec(request.headers.cookie ?? '')?.[1]
      return (id && byId.get(id)) || null
    },
    signInUrl: (returnTo: string) => `/login?return_to=${encodeURIComponent(returnTo)}`,
    getPerson: async (id: string) => byId.get(id) ?? null,
    findPersonByEmail: async (email: string) => [...byId.values()].find((p) => p.email === email.toLowerCase()) ?? null,
  }
}

export interface Built {
  readonly app: FastifyInstance
  readonly storage: StorageUnderTest
  readonly base: string
  readonly cli: string
  readonly resource: string
  readonly clock: { now: Date }
  readonly logs: string[]
}

/**
 * The plugin on the reference memory store with the test people adapter, listening on
 * 127.0.0.1 (`listen: true`) with `base` = `http://127.0.0.1:<port>`, or
 * only for `inject` with the given `baseUrl`.
 */
export async function build(
  t: Tap,
  o: { listen?: boolean; baseUrl?: string; extra?: Partial<EnvApiOptions>; wrapStorage?: (s: Storage) => Storage } = {},
): Promise<Built> {
  const port = o.listen ? await freePort() : 0
  const base = o.baseUrl ?? (o.listen ? `http://127.0.0.1:${port}` : 'https://envkeep.example')
  const storage = await storageUnderTest(t as never)
  const clock = { now: new Date(T0) }
  const logs: string[] = []
  const app = Fastify({ logger: { level: 'debug', stream: { write: (line: string) => void logs.push(line) } } })
  await app.register(envApi, {
    baseUrl: base,
    storage: o.wrapStorage ? o.wrapStorage(storage) : storage,
    keyring: null,
    people: createTestPeople(),
    now: () => clock.now,
    // the tests make many requests from one address; rate-limit.test.ts sets its own
    rateLimit: { perMinute: 1_000_000, perDay: 1_000_000 },
    ...o.extra,
  })
  if (o.listen) await app.listen({ host: '127.0.0.1', port })
  else await app.ready()
  t.teardown(async () => {
    await app.close()
    await storage.close()
  })
  return { app, storage, base, cli: `${base}/cli/oauth-client.json`, resource: `${base}/api/env`, clock, logs }
}

const ENTITIES: Record<string, string> = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"', '&#39;': "'" }
export const unescapeHtml = (s: string): string => s.replace(/&(amp|lt|gt|quot|#39);/g, (m) => ENTITIES[m] ?? m)

/** The consent form of a page: action and every hidden field. */
export function parseConsentForm(page: string): { action: string; fields: Record<string, string> } {
  const action = /<form method="post" action="([^"]*)">/.exec(page)?.[1]
  if (action === undefined) throw new Error('no consent form on the page')
  const fields: Record<string, string> = {}
  for (const m of page.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
    fields[unescapeHtml(m[1] as string)] = unescapeHtml(m[2] as string)
  }
  return { action: unescapeHtml(action), fields }
}

export function cookiesOf(setCookie: string | string[] | undefined): string {
  const list = setCookie === undefined ? [] : Array.isArray(setCookie) ? setCookie : [setCookie]
  return list.map((c) => c.split(';')[0]).join('; ')
}

export interface AuthorizeInput {
  readonly redirectUri?: string
  readonly scope?: string
  readonly state?: string
  readonly verifier?: string
  readonly resource?: string
  readonly extra?: Record<string, string>
}

/** Query of a valid authorization request (PKCE from `verifier`). */
export async function authorizeQuery(
  b: Built,
  i: AuthorizeInput = {},
): Promise<{ query: URLSearchParams; verifier: string; state: string; redirectUri: string }> {
  const verifier = i.verifier ?? oauth.generateRandomCodeVerifier()
  const state = i.state ?? oauth.generateRandomState()
  const redirectUri = i.redirectUri ?? 'http://127.0.0.1:53682/callback'
  const query = new URLSearchParams({
    response_type: 'code',
    client_id: b.cli,
    redirect_uri: redirectUri,
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
    resource: i.resource ?? b.resource,
    ...(i.scope !== undefined ? { scope: i.scope } : {}),
    ...i.extra,
  })
  return { query, verifier, state, redirectUri }
}

/**
 * Drives authorize + consent through `inject`: GET with the person's cookie,
 * parse the form, POST it with the CSRF token and cookie. Returns the 303's Location.
 */
export async function consentViaInject(
  b: Built,
  query: URLSearchParams,
  o: { person?: string; decision?: 'allow' | 'deny'; allowPush?: boolean } = {},
): Promise<URL> {
  const person = o.person ?? PEOPLE.ada!.id
  const page = await b.app.inject({
    method: 'GET',
    url: `${new URL(b.base).pathname.replace(/\/$/, '')}/oauth/authorize?${query}`,
    headers: { cookie: `test_person=${person}` },
  })
  if (page.statusCode !== 200) throw new Error(`consent page: ${page.statusCode}`)
  const form = parseConsentForm(page.body)
  const body = new URLSearchParams({ ...form.fields, decision: o.decision ?? 'allow', ...(o.allowPush ? { allow_push: 'yes' } : {}) })
  const res = await b.app.inject({
    method: 'POST',
    url: form.action,
    headers: { cookie: `test_person=${person}; ${cookiesOf(page.headers['set-cookie'])}`, 'content-type': 'application/x-www-form-urlencoded' },
    payload: body.toString(),
  })
  if (res.statusCode !== 303) throw new Error(`consent answer: ${res.statusCode}`)
  return new URL(String(res.headers.location))
}

/** A fresh code for `ada` (or `person`), with its verifier. */
export async function obtainCode(b: Built, i: AuthorizeInput & { person?: string; allowPush?: boolean } = {}) {
  const q = await authorizeQuery(b, i)
  const location = await consentViaInject(b, q.query, { ...(i.person ? { person: i.person } : {}), ...(i.allowPush ? { allowPush: true } : {}) })
  const code = location.searchParams.get('code')
  if (!code) throw new Error('no code in the redirect')
  return { code, verifier: q.verifier, redirectUri: q.redirectUri, state: q.state, location }
}

/** POST form parameters to the token endpoint through inject. */
export function tokenRequest(b: Built, params: Record<string, string | string[]>, headers: Record<string, string> = {}) {
  const body = new URLSearchParams()
  for (const [k, v] of Object.entries(params)) for (const x of Array.isArray(v) ? v : [v]) body.append(k, x)
  return b.app.inject({
    method: 'POST',
    url: `${new URL(b.base).pathname.replace(/\/$/, '')}/oauth/token`,
    headers: { 'content-type': 'application/x-www-form-urlencoded;charset=UTF-8', ...headers },
    payload: body.toString(),
  })
}

/** Exchange a fresh code for tokens. */
export async function signIn(b: Built, i: AuthorizeInput & { person?: string; allowPush?: boolean } = {}) {
  const c = await obtainCode(b, i)
  const res = await tokenRequest(b, {
    grant_type: 'authorization_code',
    code: c.code,
    code_verifier: c.verifier,
    redirect_uri: c.redirectUri,
    client_id: b.cli,
    resource: b.resource,
  })
  if (res.statusCode !== 200) throw new Error(`token: ${res.statusCode} ${res.body}`)
  const tokens = res.json() as { access_token: string; refresh_token: string; scope: string; expires_in: number; token_type: string }
  return { ...c, tokens }
}

/** GET /api/env/vaults with a bearer token. */
export function apiVaults(b: Built, token: string) {
  return b.app.inject({ method: 'GET', url: `${new URL(b.base).pathname.replace(/\/$/, '')}/api/env/vaults`, headers: { authorization: `Bearer ${token}` } })
}

/** A storage whose `method` fails with what `fail` makes; everything else passes through. */
export function failing(method: keyof Storage, fail: () => unknown): (s: Storage) => Storage {
  return (s) =>
    new Proxy(s, {
      get(target, p, r) {
        if (p === method) {
          return async () => {
            throw fail()
          }
        }
        return Reflect.get(target, p, r)
      },
    })
}

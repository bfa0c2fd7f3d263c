import { randomUUID } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Client, StreamableHTTPClientTransport, UnauthorizedError, type ClientOptions, type OAuthClientProvider } from '@modelcontextprotocol/client'
import type { EnvApiOptions } from '../../src/index.js'
import { createTestKeyring, testLogEntry } from '../../src/testing/index.js'
import { build, cookiesOf, parseConsentForm, PEOPLE, type Built } from '../oauth/helpers.js'

type Tap = { teardown(fn: () => unknown): void }

/** The plugin with the MCP endpoint on, listening on 127.0.0.1, with a key for values. */
export async function buildMcp(t: Tap, extra: Partial<EnvApiOptions> = {}): Promise<Built> {
  return build(t, { listen: true, extra: { mcp: { allowHttpLoopbackClients: true }, keyring: createTestKeyring(), ...extra } })
}

/** A vault of ada's (owner) where bob is an editor; production is owners-only. */
export async function seedVault(b: Built, name = 'shop'): Promise<string> {
  const id = randomUUID()
  await b.storage.createVault(
    {
      id,
      name,
      ownerId: PEOPLE.ada!.id,
      plan: 'self-hosted',
      environments: [
        { name: 'development', ownersOnly: false },
        { name: 'production', ownersOnly: true },
      ],
      now: b.clock.now,
    },
    testLogEntry({ vaultId: id, action: 'vault_created' }),
  )
  await b.storage.changeMember(
    { kind: 'set', vaultId: id, personId: PEOPLE.bob!.id, role: 'editor' },
    testLogEntry({ vaultId: id, action: 'member_added', subject: PEOPLE.bob!.id, detail: 'editor' }),
  )
  return id
}

/** Serves a client metadata document at http://127.0.0.1:<port>/client.json (plain http, admitted by allowHttpLoopbackClients). */
export async function serveClientDocument(t: Tap, doc: (url: string) => Record<string, unknown>): Promise<{ url: string; fetches: () => number }> {
  let count = 0
  let url = ''
  const server: Server = createServer((req, res) => {
    count++
    if (req.url !== '/client.json') {
      res.writeHead(404).end()
      return
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(doc(url)))
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/client.json`
  t.teardown(() => new Promise<void>((r) => server.close(() => r())))
  return { url, fetches: () => count }
}

/** Every byte a client received, to scan for canaries. */
export function recordingFetch(received: string[]): typeof fetch {
  return (async (input: string | URL | Request, init?: RequestInit) => {
    const res = await fetch(input, init)
    const body = await res.clone().text()
    received.push(body, JSON.stringify([...res.headers]))
    return res
  }) as typeof fetch
}

export interface ConsentChoice {
  readonly person?: string
  readonly allowPropose?: boolean
  /** what the consent page said, for assertions */
  readonly pages?: string[]
}

/**
 * An OAuth provider for the SDK client whose "browser" is a fetch with the
 * person's cookie: it reads the consent page, posts Allow (and "propose
 * changes" when asked), and keeps the code from the redirect.
 */
export function consentingProvider(
  b: Built,
  o: { clientId?: string; redirectUri: string; clientName?: string; choice?: ConsentChoice; scope?: string },
): OAuthClientProvider & { callback: () => URLSearchParams } {
  let tokens: Awaited<ReturnType<OAuthClientProvider['tokens']>>
  let info: Awaited<ReturnType<OAuthClientProvider['clientInformation']>> = o.clientId ? { client_id: o.clientId } : undefined
  let verifier = ''
  let callback = new URLSearchParams()
  const person = o.choice?.person ?? PEOPLE.ada!.id
  return {
    get redirectUrl() {
      return o.redirectUri
    },
    get clientMetadata() {
      return {
        client_name: o.clientName ?? 'Test MCP client',
        redirect_uris: [o.redirectUri],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
        ...(o.scope ? { scope: o.scope } : {}),
      }
    },
    clientInformation: () => info,
    saveClientInformation: (i) => {
      info = i
    },
    tokens: () => tokens,
    saveTokens: (t) => {
      tokens = t
    },
    saveCodeVerifier: (v) => {
      verifier = v
    },
    codeVerifier: () => verifier,
    async redirectToAuthorization(url: URL) {
      const page = await fetch(url, { redirect: 'manual', headers: { cookie: `test_person=${person}` } })
      const text = await page.text()
      o.choice?.pages?.push(text)
      if (page.status !== 200)
        throw new Error(
          `consent page: ${page.status} ${page.headers.get('location') ?? ''} ${text
            .replace(/<[^>]+>/g, ' ')
            .replace(/\s+/g, ' ')
            .slice(0, 600)}`,
        )
      const form = parseConsentForm(text)
      const body = new URLSearchParams({ ...form.fields, decision: 'allow', ...(o.choice?.allowPropose ? { allow_propose: 'yes' } : {}) })
      const res = await fetch(new URL(form.action, b.base), {
        method: 'POST',
        redirect: 'manual',
        headers: {
          cookie: `test_person=${person}; ${cookiesOf(page.headers.getSetCookie())}`,
          'content-type': 'application/x-www-form-urlencoded',
          origin: b.base,
        },
        body,
      })
      if (res.status !== 303) throw new Error(`consent answer: ${res.status}`)
      callback = new URL(String(res.headers.get('location'))).searchParams
    },
    callback: () => callback,
  }
}

/** Connects the SDK client over HTTP: a 401, the whole OAuth flow, then a connected client. */
export async function connect(
  b: Built,
  provider: ReturnType<typeof consentingProvider>,
  received: string[],
  options: ClientOptions = {},
): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const url = new URL(`${b.base}/mcp`)
  const first = new StreamableHTTPClientTransport(url, { authProvider: provider, fetch: recordingFetch(received) })
  const client = new Client({ name: 'envkeep-test', version: '1.0.0' }, options)
  try {
    await client.connect(first)
    return { client, transport: first }
  } catch (err) {
    if (!(err instanceof UnauthorizedError)) throw err
  }
  await first.finishAuth(provider.callback())
  const transport = new StreamableHTTPClientTransport(url, { authProvider: provider, fetch: recordingFetch(received) })
  const connected = new Client({ name: 'envkeep-test', version: '1.0.0' }, options)
  await connected.connect(transport)
  return { client: connected, transport }
}

/** Applies a push on its review page as `person`, as a person would (GET the page, POST Apply with its CSRF token). */
export async function applyOnReviewPage(b: Built, reviewUrl: string, person: string): Promise<number> {
  const page = await fetch(reviewUrl, { headers: { cookie: `test_person=${person}` } })
  const html = await page.text()
  const csrf = /name="_csrf" value="([^"]+)"/.exec(html)?.[1]
  if (!csrf) throw new Error(`no form on the review page (${page.status})`)
  const res = await fetch(`${reviewUrl}/apply`, {
    method: 'POST',
    redirect: 'manual',
    headers: {
      cookie: `test_person=${person}; ${cookiesOf(page.headers.getSetCookie())}`,
      'content-type': 'application/x-www-form-urlencoded',
      origin: b.base,
    },
    body: new URLSearchParams({ _csrf: csrf }),
  })
  return res.status
}

import t from 'tap'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Client, StreamableHTTPClientTransport, UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/client'
import { chromium, type Browser, type Page } from 'playwright-core'
import { axeViolations, CHROMIUM_LAUNCH, describeViolations, loopbackCallback, spawnNode, withTestDatabase, type Spawned } from '@envkeep/test-support'
import { freePort, runCli, tempDir } from './helpers.js'

const BIN = fileURLToPath(new URL('../dist/bin.js', import.meta.url))
const PASSWORD = 'canary-owner-password-mcp'
const CANARY = 'CANARY-mcp-e2e-9d41'

type Tool = { isError?: boolean; content: { type: string; text: string }[] }
type Tokens = Awaited<ReturnType<OAuthClientProvider['tokens']>>

/** An SDK OAuth provider whose browser is Chromium: the person reads the consent page and answers it. */
function chromiumProvider(
  page: Page,
  o: { clientId?: string; clientName: string; redirectUri: string; allowPropose: boolean; consent: string[]; axe?: string[] },
): OAuthClientProvider & { setTokens(t: Tokens): void } {
  let tokens: Tokens
  let info: Awaited<ReturnType<OAuthClientProvider['clientInformation']>> = o.clientId ? { client_id: o.clientId } : undefined
  let verifier = ''
  return {
    get redirectUrl() {
      return o.redirectUri
    },
    get clientMetadata() {
      return {
        client_name: o.clientName,
        redirect_uris: [o.redirectUri],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
        scope: 'mcp:read mcp:propose',
      }
    },
    clientInformation: () => info,
    saveClientInformation: (i) => {
      info = i
    },
    tokens: () => tokens,
    saveTokens: (x) => {
      tokens = x
    },
    setTokens: (x) => {
      tokens = x
    },
    saveCodeVerifier: (v) => {
      verifier = v
    },
    codeVerifier: () => verifier,
    async redirectToAuthorization(url: URL) {
      await page.goto(url.href)
      await page.waitForURL(/\/oauth\/authorize\?/)
      o.consent.push((await page.locator('main').textContent()) ?? '')
      for (const width of [1100, 390]) {
        await page.setViewportSize({ width, height: 900 })
        o.axe?.push(...(await axeViolations(page)).map((v) => `${width}px ${describeViolations([v])}`))
        if ((await page.evaluate<number>('document.documentElement.scrollWidth')) > width) o.axe?.push(`${width}px: horizontal scrolling`)
      }
      await page.setViewportSize({ width: 1100, height: 900 })
      if (o.allowPropose) await page.getByLabel('Also let it propose changes').check()
      await page.getByRole('button', { name: 'Allow' }).click()
    },
  }
}

async function connect(base: string, provider: OAuthClientProvider, callback: Promise<URL>, received: string[]): Promise<Client> {
  const recording = (async (input: string | URL | Request, init?: RequestInit) => {
    const res = await fetch(input, init)
    received.push(await res.clone().text(), JSON.stringify([...res.headers]))
    return res
  }) as typeof fetch
  const url = new URL(`${base}/mcp`)
  const first = new StreamableHTTPClientTransport(url, { authProvider: provider, fetch: recording })
  try {
    await new Client({ name: 'e2e', version: '1' }).connect(first)
    throw new Error('connected without signing in')
  } catch (err) {
    if (!(err instanceof UnauthorizedError)) throw err
  }
  await first.finishAuth((await callback).searchParams)
  const client = new Client({ name: 'e2e', version: '1' })
  await client.connect(new StreamableHTTPClientTransport(url, { authProvider: provider, fetch: recording }))
  return client
}

const json = (r: Tool): Record<string, unknown> => JSON.parse(r.content[0]?.text ?? 'null') as Record<string, unknown>

for (const store of ['sqlite', 'postgres'] as const) {
  t.test(
    `the official SDK client against envkeep-server on ${store}: metadata document and DCR, consent in Chromium, every tool, a push applied by a person, refresh, revoke; no value anywhere`,
    async (t) => {
      const dir = tempDir(t)
      const data = join(dir, 'data')
      const port = await freePort()
      const base = `http://127.0.0.1:${port}`
      const env: Record<string, string> = { ENVKEEP_MCP_ALLOW_HTTP_CLIENTS: 'loopback', ENVKEEP_BASE_URL: base, ENVKEEP_DATA_DIR: data }
      if (store === 'postgres') {
        const url = await withTestDatabase(t)
        if (!url) return
        env['ENVKEEP_DATABASE_URL'] = url
        env['ENVKEEP_DATABASE_POOL'] = '4'
        t.equal((await runCli(['init'], env, '', dir)).code, 0)
      }
      const server: Spawned = spawnNode(BIN, ['start', '--port', String(port)], { env, cwd: dir })
      t.teardown(() => {
        if (server.child.exitCode === null) server.child.kill('SIGKILL')
      })
      const setupLink = (await server.waitFor('stderr', /(http:\/\/\S+\/setup\?token=[A-Za-z0-9_-]{43})/))[1] as string

      const browser: Browser = await chromium.launch(CHROMIUM_LAUNCH)
      t.teardown(() => browser.close())
      const page = await (await browser.newContext()).newPage()
      const problems: string[] = []
      page.on('console', (m) => {
        if (m.type() === 'error' || /Content Security Policy|Refused to/i.test(m.text())) problems.push(m.text())
      })
      page.on('dialog', (d) => void d.accept())

      await page.goto(setupLink)
      await page.getByLabel('Email').fill('olga@example.com')
      await page.getByLabel('Name').fill('Olga Owner')
      await page.getByLabel('Password', { exact: true }).fill(PASSWORD)
      await page.getByLabel('Password again').fill(PASSWORD)
      await page.getByRole('button', { name: 'Create account' }).click()
      await page.waitForURL(`${base}/`)
      await page.getByLabel('Vault name').fill('Acme')
      await page.getByRole('button', { name: 'Create vault' }).click()
      await page.waitForURL(/\/v\/[0-9a-f-]{36}$/)
      const vaultId = page.url().split('/v/')[1] as string

      // 1. a client known by its metadata document (served on loopback over http, admitted by the setting)
      const cb = await loopbackCallback()
      t.teardown(cb.close)
      let docUrl = ''
      const docServer = createServer((_req, res) => {
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ client_id: docUrl, client_name: 'Claude Code', redirect_uris: [cb.redirectUri], token_endpoint_auth_method: 'none' }))
      })
      await new Promise<void>((r) => docServer.listen(0, '127.0.0.1', r))
      t.teardown(() => docServer.close())
      docUrl = `http://127.0.0.1:${(docServer.address() as AddressInfo).port}/oauth-client.json`
      const received: string[] = []
      const consent: string[] = []
      const axe: string[] = []
      const provider = chromiumProvider(page, { clientId: docUrl, clientName: 'ignored', redirectUri: cb.redirectUri, allowPropose: true, consent, axe })
      const client = await connect(base, provider, cb.callback, received)
      t.match(consent[0], /Claude Code/, 'the consent page names the client')
      t.match(consent[0], /names, never values/)

      t.same((await client.listTools()).tools.map((x) => x.name).sort(), [
        'compare_env',
        'list_variables',
        'list_vaults',
        'propose_push',
        'push_status',
        'recent_changes',
      ])
      t.same(json((await client.callTool({ name: 'list_vaults', arguments: {} })) as Tool)['vaults'], [
        { id: vaultId, name: 'Acme', role: 'owner', environments: ['development', 'preview', 'production'] },
      ])
      const proposed = (await client.callTool({
        name: 'propose_push',
        arguments: { vault: 'Acme', environment: 'development', variables: { API_KEY: CANARY } },
      })) as Tool
      t.notOk(proposed.isError, proposed.content[0]?.text)
      const push = json(proposed)
      t.equal(json((await client.callTool({ name: 'push_status', arguments: { push: push['push'] } })) as Tool)['status'], 'pending')

      // a person applies it on the review page
      await page.goto(String(push['review_url']))
      await page.getByRole('button', { name: 'Apply' }).click()
      await page.waitForURL(String(push['review_url']))
      t.equal(
        json((await client.callTool({ name: 'push_status', arguments: { push: push['push'] } })) as Tool)['status'],
        'applied',
        'push_status says applied',
      )

      const listed = json((await client.callTool({ name: 'list_variables', arguments: { vault: vaultId, environment: 'development' } })) as Tool)
      t.same(
        (listed['variables'] as { name: string }[]).map((v) => v.name),
        ['API_KEY'],
      )
      t.same(
        json((await client.callTool({ name: 'compare_env', arguments: { vault: 'Acme', environment: 'development', names: ['OTHER'] } })) as Tool)[
          'missing_from_file'
        ],
        ['API_KEY'],
      )
      t.same(
        (
          json((await client.callTool({ name: 'recent_changes', arguments: { vault: 'Acme', environment: 'development' } })) as Tool)['changes'] as {
            added: string[]
          }[]
        )[0]?.added,
        ['API_KEY'],
      )

      // refresh: with a dead access token the SDK refreshes and goes on; the old refresh token is then spent
      const before = await provider.tokens()
      provider.setTokens({ ...(before as NonNullable<Tokens>), access_token: 'ekat_dead' })
      t.ok(Array.isArray(json((await client.callTool({ name: 'list_vaults', arguments: {} })) as Tool)['vaults']), 'refreshed and answered')
      t.not((await provider.tokens())?.refresh_token, before?.refresh_token, 'the refresh token rotated')

      // the vault's access log says who, through which client and tool, and that only names were seen
      await page.goto(`${base}/v/${vaultId}/access-log`)
      const logText = (await page.locator('#access-log').textContent()) ?? ''
      t.match(logText, /via an AI assistant \(MCP\)/)
      t.match(logText, /MCP Claude Code: list_variables \(names only\)/)
      t.match(logText, /push created/)

      // 2. a client that registers itself (RFC 7591), in the same browser
      const cb2 = await loopbackCallback()
      t.teardown(cb2.close)
      const consent2: string[] = []
      const dcr = chromiumProvider(page, { clientName: 'Cursor', redirectUri: cb2.redirectUri, allowPropose: false, consent: consent2, axe })
      const client2 = await connect(base, dcr, cb2.callback, received)
      t.match(String((await dcr.clientInformation())?.client_id), /^mcp_/, 'registered by DCR')
      t.match(consent2[0], /known only by a redirect to this computer/)
      const refused = (await client2.callTool({
        name: 'propose_push',
        arguments: { vault: 'Acme', environment: 'development', variables: { X: CANARY } },
      })) as Tool
      t.equal(refused.isError, true, 'without "propose changes" a proposal is refused')
      t.equal(refused.content[0]?.text.split('\n').length, 2)

      // the Sign-ins page lists both by name; revoking one ends it
      await page.goto(`${base}/sign-ins`)
      const signIns = (await page.locator('main').textContent()) ?? ''
      t.match(signIns, /Claude Code \(MCP\)/)
      t.match(signIns, /Cursor \(MCP\)/)
      await page.locator('tr', { hasText: 'Cursor (MCP)' }).getByRole('button', { name: 'Revoke' }).click()
      await page.waitForURL(/done=revoked/)
      await t.rejects(client2.callTool({ name: 'list_vaults', arguments: {} }), 'a revoked sign-in is refused')

      // cross-resource: the MCP token is refused at /api/env
      const mcpToken = String((await provider.tokens())?.access_token)
      t.equal((await fetch(`${base}/api/env/vaults`, { headers: { authorization: `Bearer ${mcpToken}` } })).status, 401)

      await client.close()
      t.same(problems, [], 'no CSP or script error in the browser')
      t.same(axe, [], 'the consent pages pass axe and fit 390 px')
      const everything = `${received.join('\n')}\n${server.stdout()}\n${server.stderr()}`
      t.ok(everything.includes('API_KEY') && everything.includes('review_url'), 'the scan sees the tool results and the log')
      t.notOk(everything.includes(CANARY), 'no canary in any byte the client received or the server logged')
      t.notOk(everything.includes(PASSWORD))
    },
  )
}

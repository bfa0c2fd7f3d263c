import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import { spawnNode } from '@envkeep/test-support'
import { createConfigStore } from '../src/config-store.js'
import { runCli, tempConfig } from './helpers/run-cli.js'

// Hardening 7, from outside: the real CLI against a server that lies. Everything a server
// sends is untrusted: no terminal escape reaches the terminal, no link off the server's own
// origin is opened or printed, no name that could be a shell command is written, and no
// answer is read past a bound.

const BIN = fileURLToPath(new URL('../dist/bin.js', import.meta.url))
const ESC = '\u001b]0;pwned\u0007\u001b[2J'
const VAULT_A = '11111111-1111-4111-8111-111111111111'

type Handler = (req: IncomingMessage, res: ServerResponse) => void

async function hostile(t: Test, routes: Record<string, Handler>): Promise<{ base: string; sent: () => number }> {
  let sent = 0
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!
    const key = `${req.method} ${path}`
    const handler = routes[key] ?? Object.entries(routes).find(([k]) => k.endsWith('*') && key.startsWith(k.slice(0, -1)))?.[1]
    if (!handler) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not_found"}')
      return
    }
    const write = res.write.bind(res)
    res.write = ((chunk: Buffer | string, ...rest: unknown[]) => {
      sent += Buffer.byteLength(chunk)
      return (write as (...a: unknown[]) => boolean)(chunk, ...rest)
    }) as typeof res.write
    handler(req, res)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => {
    server.closeAllConnections()
    server.close()
  })
  return { base: `http://127.0.0.1:${(server.address() as { port: number }).port}`, sent: () => sent }
}

const json =
  (body: unknown, status = 200): Handler =>
  (_req, res) => {
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body))
  }

/** A config dir holding a live sign-in to `base` (as `login` would have left it). */
async function signedIn(t: Test, base: string): Promise<string> {
  const dir = await tempConfig(t)
  await createConfigStore(dir).withLock(async (tx) => {
    const file = await tx.read()
    file.signIns[base] = {
      baseUrl: base,
      issuer: base,
      tokenEndpoint: `${base}/oauth/token`,
      revocationEndpoint: null,
      clientId: `${base}/cli/oauth-client.json`,
      resource: `${base}/api/env`,
      scope: 'env:read env:push',
      accessToken: 'ekat_canary-access-token',
      refreshToken: 'ekrt_canary-refresh-token',
      accessExpiresAt: Date.now() + 3_600_000,
      signedInAt: new Date().toISOString(),
    }
    file.current = base
    await tx.write(file)
  })
  return dir
}

function cli(args: string[], configDir: string, cwd?: string) {
  return spawnNode(BIN, args, { env: { ENVKEEP_CONFIG_DIR: configDir, NO_COLOR: '1' }, ...(cwd ? { cwd } : {}) }).done
}

t.test('vault ids and names with terminal escapes are printed harmless (list, and the "give the id" hint)', async (t) => {
  const evilId = `${VAULT_A}${ESC}`
  const s = await hostile(t, {
    'GET /api/env/vaults': json({
      vaults: [
        { id: evilId, name: 'shop', role: `owner${ESC}`, environments: [`dev${ESC}`] },
        { id: `2${ESC}`, name: 'shop', role: 'owner', environments: [] },
        { id: `3`, name: `name${ESC}`, role: 'owner', environments: [] },
      ],
    }),
  })
  const dir = await signedIn(t, s.base)
  const list = await cli(['vaults'], dir)
  t.equal(list.code, 0)
  t.notOk(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/.test(list.stdout + list.stderr), 'no control character printed')
  t.match(list.stdout, VAULT_A)
  const ambiguous = await cli(['pull', 'shop', 'development'], dir)
  t.equal(ambiguous.code, 2)
  t.match(ambiguous.stderr, /give the id instead/)
  t.notOk(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/.test(ambiguous.stdout + ambiguous.stderr), 'no control character in the hint')
})

t.test('error records with escapes are printed harmless', async (t) => {
  const s = await hostile(t, {
    'GET /api/env/vaults': json({ error: `forbidden${ESC}`, message: `no${ESC}`, where: `env API${ESC}`, ref: `R${ESC}` }, 403),
  })
  const dir = await signedIn(t, s.base)
  const r = await cli(['vaults'], dir)
  t.equal(r.code, 1)
  t.notOk(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/.test(r.stdout + r.stderr))
})

t.test('login: an authorization endpoint that is file:, javascript: or on another host is never opened or printed', async (t) => {
  for (const endpoint of ['file:///etc/passwd', 'javascript:alert(1)', 'https://evil.example/authorize', 'http://127.0.0.1:1/authorize']) {
    const meta = {
      authorization_endpoint: endpoint,
      response_types_supported: ['code'],
      code_challenge_methods_supported: ['S256'],
    }
    const s2 = await hostile(t, {
      'GET /.well-known/oauth-authorization-server': (req, res) =>
        json({ ...meta, issuer: `http://${req.headers.host}`, token_endpoint: `http://${req.headers.host}/oauth/token` })(req, res),
    })
    const dir = await tempConfig(t)
    // in-process with a terminal, so the browser would be opened
    const opened: string[] = []
    const r = await runCli(['login', '--base-url', s2.base], { env: { ENVKEEP_CONFIG_DIR: dir }, isTTY: true, openBrowser: async (u) => void opened.push(u) })
    t.equal(r.code, 1, endpoint)
    t.same(opened, [], `${endpoint}: nothing opened`)
    t.notOk(r.stderr.includes(endpoint), `${endpoint}: not printed`)
    t.match(r.stderr, /a link that is not on http:\/\/127\.0\.0\.1:\d+; refusing to open or show it/)
    // and the real binary, printing the link instead
    const real = await cli(['login', '--no-browser', '--base-url', s2.base], dir)
    t.equal(real.code, 1)
    t.notOk(real.stderr.includes(endpoint), `${endpoint}: the real CLI does not print it`)
  }
})

t.test('push: a review link on another host is not printed; the push id is, and the exit code says something is wrong', async (t) => {
  const s = await hostile(t, {
    'GET /api/env/vaults': json({ vaults: [{ id: VAULT_A, name: 'shop', role: 'owner', environments: ['development'] }] }),
    [`POST /api/env/${VAULT_A}/development/imports`]: json(
      {
        import: '22222222-2222-4222-8222-222222222222',
        status: 'pending',
        names: ['A'],
        url: 'https://evil.example/review',
        expires_at: '2026-12-01T00:00:00.000Z',
      },
      201,
    ),
  })
  const dir = await signedIn(t, s.base)
  const work = await tempConfig(t)
  const { writeFile } = await import('node:fs/promises')
  await writeFile(join(work, '.env'), 'A=canary-value-hostile\n')
  const r = await cli(['push', 'shop', 'development', '.env'], dir, work)
  t.equal(r.code, 1)
  t.notOk((r.stdout + r.stderr).includes('evil.example'), 'the foreign link is not printed')
  t.match(r.stdout, /Push id: 22222222-2222-4222-8222-222222222222/)
  t.match(r.stderr, /its review link: the server gave a link that is not on/)
})

t.test('pull: names that could be shell commands are refused and nothing is written', async (t) => {
  const s = await hostile(t, {
    'GET /api/env/vaults': json({ vaults: [{ id: VAULT_A, name: 'shop', role: 'owner', environments: ['development'] }] }),
    [`GET /api/env/${VAULT_A}/development`]: json({ vault: VAULT_A, environment: 'development', variables: { OK: 'fine', 'A=1; touch /tmp/pwned #': 'x' } }),
  })
  const dir = await signedIn(t, s.base)
  const work = await tempConfig(t)
  const r = await cli(['pull', 'shop', 'development', '--format', 'shell', '-o', 'out.sh'], dir, work)
  t.equal(r.code, 1)
  t.match(r.stderr, /holds 1 name that no envkeep variable can have; nothing was written/)
  t.notOk(existsSync(join(work, 'out.sh')))
  t.equal(r.stdout, '')
})

t.test('pull: values pass through exactly, escapes included (they are data, written to a file)', async (t) => {
  const value = `line1\nline2 ${ESC} \u202e`
  const s = await hostile(t, {
    'GET /api/env/vaults': json({ vaults: [{ id: VAULT_A, name: 'shop', role: 'owner', environments: ['development'] }] }),
    [`GET /api/env/${VAULT_A}/development`]: json({ vault: VAULT_A, environment: 'development', variables: { A: value } }),
  })
  const dir = await signedIn(t, s.base)
  const r = await cli(['pull', 'shop', 'development', '--format', 'json'], dir)
  t.equal(r.code, 0)
  t.same(JSON.parse(r.stdout), { A: value })
})

t.test('an endless answer is cut at the bound with a clear error, not read into memory', async (t) => {
  const chunk = Buffer.alloc(1024 * 1024, 'x')
  const s = await hostile(t, {
    'GET /api/env/vaults': json({ vaults: [{ id: VAULT_A, name: 'shop', role: 'owner', environments: ['development'] }] }),
    [`GET /api/env/${VAULT_A}/development`]: (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.write('{"variables":{"A":"')
      const more = (): void => {
        while (!res.destroyed && res.write(chunk)) {
          if (s.sent() > 1024 * 1024 * 1024) return void res.end('"}}') // 1 GiB: give up
        }
        if (!res.destroyed) res.once('drain', more)
      }
      res.on('close', () => res.removeAllListeners('drain'))
      more()
    },
  })
  const dir = await signedIn(t, s.base)
  const r = await cli(['pull', 'shop', 'development'], dir)
  t.equal(r.code, 1)
  t.match(r.stderr, /the answer from 127\.0\.0\.1:\d+ is larger than 64 MiB; refusing to read it/)
  t.ok(s.sent() < 200 * 1024 * 1024, `the CLI stopped reading early (${Math.round(s.sent() / 1024 / 1024)} MiB sent)`)
})

t.test('a Content-Length past the bound is refused before reading', async (t) => {
  const { boundedFetch } = await import('../src/untrusted.js')
  const s = await hostile(t, {
    'GET /big': (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(600 * 1024 * 1024) })
      res.write('{')
    },
  })
  const f = boundedFetch(fetch, 1024)
  await t.rejects(f(`${s.base}/big`), { name: 'AnswerTooLargeError' })
  t.ok(s.sent() < 10, 'nothing but the first byte was sent')
})

t.test('whoami: who the server says signed in is shown terminal-safe (issue 25)', async (t) => {
  const s = await hostile(t, {
    'POST /oauth/token': json({
      access_token: 'ekat_canary-renewed',
      token_type: 'Bearer',
      expires_in: 3600,
      refresh_token: 'ekrt_canary-renewed',
      scope: 'env:read',
      envkeep_person: { email: `ana@example.com${ESC}`, name: `Ana${ESC}\u202e` },
    }),
    'GET /api/env/vaults': json({ vaults: [] }),
  })
  const dir = await signedIn(t, s.base)
  // the access token has expired: whoami renews it, and the renewal says who
  await createConfigStore(dir).withLock(async (tx) => {
    const file = await tx.read()
    file.signIns[s.base] = { ...file.signIns[s.base]!, accessExpiresAt: 0 }
    await tx.write(file)
  })
  const r = await cli(['whoami'], dir)
  t.equal(r.code, 0, r.stderr)
  t.match(r.stdout, /^person: +Ana ]0;pwned \[2J <ana@example\.com ]0;pwned \[2J>$/m, 'shown, with its escapes removed')
  t.notOk(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202e]/.test(r.stdout + r.stderr))
  const j = await cli(['whoami', '--json'], dir)
  t.notOk(/[\u007f-\u009f\u202e]|\\u001b|\\u0007/.test(j.stdout), 'the JSON too')
})

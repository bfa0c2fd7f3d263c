import t from 'tap'
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startOidcIssuer } from '@envkeep/test-support'
import { runBin, startRealServer } from './helpers/real-server.js'

// A CI job with no envkeep secret: the real CLI binary, in a fake GitHub
// Actions environment, against the real server and a real OIDC issuer on
// 127.0.0.1 whose tokens the vault's CI identity trusts.

const SUB = 'repo:acme/shop:ref:refs/heads/main'
const REQUEST_TOKEN = 'gh-request-token-for-this-job'

t.test('GitHub Actions: envkeep run/pull/vaults/login --ci with the job identity token, nothing stored', async (t) => {
  const server = await startRealServer(t, { ENVKEEP_CI_ALLOW_HTTP_ISSUERS: 'loopback' })
  const idp = await startOidcIssuer()
  t.teardown(() => idp.close())
  t.equal(
    (await server.admin(['admin', 'user', 'create', '--email', 'ana@example.com', '--name', 'Ana', '--password-stdin'], 'a long enough password\n')).code,
    0,
  )
  const shop = await server.admin(['admin', 'vault', 'create', '--name', 'shop', '--owner', 'ana@example.com', '--json'])
  t.equal(shop.code, 0)
  const vaultId = (JSON.parse(shop.stdout.trim().split('\n').pop()!) as { vault: { id: string } }).vault.id
  t.equal((await server.admin(['admin', 'var', 'set', '--vault', 'shop', '--env', 'development', 'DB_URL'], 'postgres://dev-db\n')).code, 0)
  t.equal((await server.admin(['admin', 'var', 'set', '--vault', 'shop', '--env', 'production', 'DB_URL'], 'postgres://prod-db\n')).code, 0)
  const add = await server.admin([
    'admin',
    'ci',
    'add',
    '--vault',
    'shop',
    '--name',
    'deploy',
    '--issuer',
    idp.issuer,
    '--audience',
    server.baseUrl,
    '--subject',
    'repo:acme/shop:*',
    '--role',
    'owner',
    '--environments',
    'development',
    '--claims',
    'ref=refs/heads/main',
    '--json',
  ])
  t.equal(add.code, 0, add.stderr)
  t.equal(JSON.parse(add.stdout).identity.name, 'deploy')

  // GitHub's id-token endpoint: answers the job's request token with a JWT for the asked audience
  let asked = 0
  const gh = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x')
    if (req.headers.authorization !== `bearer ${REQUEST_TOKEN}`) return void res.writeHead(401).end()
    asked++
    void idp.sign({ sub: SUB, aud: url.searchParams.get('audience') ?? '', ref: 'refs/heads/main', run_id: '777' }).then((value) => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ value }))
    })
  })
  await new Promise<void>((r) => gh.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise<void>((r) => gh.close(() => r())))
  const ghUrl = `http://127.0.0.1:${(gh.address() as { port: number }).port}/token?api-version=2.0`

  const config = mkdtempSync(join(tmpdir(), 'envkeep-ci-config-'))
  t.teardown(() => rmSync(config, { recursive: true, force: true }))
  const ciEnv = {
    ENVKEEP_BASE_URL: server.baseUrl,
    ENVKEEP_CONFIG_DIR: config,
    CI: 'true',
    GITHUB_ACTIONS: 'true',
    ACTIONS_ID_TOKEN_REQUEST_URL: ghUrl,
    ACTIONS_ID_TOKEN_REQUEST_TOKEN: REQUEST_TOKEN,
  }

  const run = await runBin(
    ['run', 'shop', 'development', '--', process.execPath, '-e', 'process.stdout.write(process.env.DB_URL === "postgres://dev-db" ? "got it" : "missing")'],
    ciEnv,
  ).done
  t.equal(run.code, 0, run.stderr)
  t.match(run.stdout, /got it/, 'the program got the variable')
  t.ok(asked >= 1, "the job's identity token was asked for")
  t.same(readdirSync(config), [], 'nothing was written to the config directory')

  const prod = await runBin(['pull', 'shop', 'production'], ciEnv).done
  t.equal(prod.code, 1, 'production is outside the identity: refused')
  t.match(prod.stderr, /limited to development/)
  t.notMatch(prod.stdout + prod.stderr, /prod-db/)

  const login = await runBin(['login', '--ci'], ciEnv).done
  t.equal(login.code, 0, login.stderr)
  t.match(login.stderr, /as CI identity "deploy" of vault shop, reaching shop \(owner: development\)/, 'names the CI identity (issue 25)')

  const vaults = await runBin(['vaults'], {
    ...ciEnv,
    ACTIONS_ID_TOKEN_REQUEST_URL: '',
    ACTIONS_ID_TOKEN_REQUEST_TOKEN: '',
    ENVKEEP_OIDC_TOKEN: await idp.sign({ sub: SUB, aud: server.baseUrl, ref: 'refs/heads/main' }),
  }).done
  t.equal(vaults.code, 0, `ENVKEEP_OIDC_TOKEN works too: ${vaults.stderr}`)
  t.match(vaults.stdout, /shop/)

  // the owner of another vault adds an identity for the same issuer, audience and subjects:
  // the CLI names the vault it reads, so this vault's CI keeps working
  t.equal(
    (await server.admin(['admin', 'user', 'create', '--email', 'eve@example.com', '--name', 'Eve', '--password-stdin'], 'another long password\n')).code,
    0,
  )
  t.equal((await server.admin(['admin', 'vault', 'create', '--name', 'other', '--owner', 'eve@example.com'])).code, 0)
  const broad = ['--issuer', idp.issuer, '--audience', server.baseUrl, '--subject', 'repo:acme/shop:*', '--role', 'editor']
  t.equal((await server.admin(['admin', 'ci', 'add', '--vault', 'other', '--name', 'broad', ...broad])).code, 0)
  const despite = await runBin(['pull', 'shop', 'development'], ciEnv).done
  t.equal(despite.code, 0, `another vault's identity does not get in the way: ${despite.stderr}`)
  t.match(despite.stdout, /dev-db/)
  const ambiguous = await runBin(['login', '--ci'], ciEnv).done
  t.equal(ambiguous.code, 4, 'login --ci naming no vault while two vaults match: refused')
  const named = await runBin(['login', '--ci', '--vault', 'shop'], ciEnv).done
  t.equal(named.code, 0, `login --ci --vault names the vault: ${named.stderr}`)
  t.match(named.stderr, /CI identity "deploy"/)

  const missing = await runBin(['pull', 'shop', 'development'], { ...ciEnv, ACTIONS_ID_TOKEN_REQUEST_TOKEN: '' }).done
  t.equal(missing.code, 4, 'a missing GitHub variable: needs sign-in')
  t.match(missing.stderr, /ACTIONS_ID_TOKEN_REQUEST_TOKEN is not set/)
  t.match(missing.stderr, /id-token: write/)

  const wrong = await runBin(['pull', 'shop', 'development'], {
    ...ciEnv,
    ACTIONS_ID_TOKEN_REQUEST_URL: '',
    ACTIONS_ID_TOKEN_REQUEST_TOKEN: '',
    ENVKEEP_OIDC_TOKEN: await idp.sign({ sub: 'repo:evil/fork:ref:refs/heads/main', aud: server.baseUrl, ref: 'refs/heads/main' }),
  }).done
  t.equal(wrong.code, 4, 'an identity the vault does not trust: exit 4')
  t.match(wrong.stderr, /refused this CI run's identity/)
  t.match(wrong.stderr, /[0-9A-HJKMNP-TV-Z]{10}/, 'with the ref')

  await t.test("a folder's .envkeep.json cannot take the CI token (issue 25)", async (t) => {
    // a server someone named in the repository's link file: it records whatever reaches it
    const seen: string[] = []
    const thief = createServer((req, res) => {
      seen.push(`${req.method} ${req.url}`)
      res.writeHead(404).end()
    })
    await new Promise<void>((r) => thief.listen(0, '127.0.0.1', r))
    t.teardown(() => new Promise<void>((r) => thief.close(() => r())))
    const thiefUrl = `http://127.0.0.1:${(thief.address() as { port: number }).port}`
    const folder = mkdtempSync(join(tmpdir(), 'envkeep-ci-link-'))
    t.teardown(() => rmSync(folder, { recursive: true, force: true }))
    writeFileSync(join(folder, '.envkeep.json'), JSON.stringify({ baseUrl: thiefUrl, vault: { id: vaultId, name: 'shop' }, environment: 'development' }))
    const { ENVKEEP_BASE_URL: _named, ...unnamed } = ciEnv
    const before = asked
    for (const env of [unnamed, { ...unnamed, ACTIONS_ID_TOKEN_REQUEST_URL: '', ACTIONS_ID_TOKEN_REQUEST_TOKEN: '', ENVKEEP_OIDC_TOKEN: 'a.b.c' }]) {
      const r = await runBin(['pull'], env, folder).done
      t.equal(r.code, 4, r.stderr)
      t.match(r.stderr, /identity token goes only to a server named by ENVKEEP_BASE_URL or --base-url/)
      t.notMatch(r.stderr, new RegExp(`login --base-url ${thiefUrl}`), "the hint never points at the link's server")
    }
    t.same(seen, [], 'nothing reached the server the link names')
    t.equal(asked, before, "no identity token was asked for the link's server")
    // named by the environment, the same folder works
    const named = await runBin(['pull', '--json'], { ...unnamed, ENVKEEP_BASE_URL: server.baseUrl }, folder).done
    t.equal(named.code, 0, named.stderr)
    t.same(JSON.parse(named.stdout), { DB_URL: 'postgres://dev-db' }, 'named by ENVKEEP_BASE_URL, the same folder reads')

    // https always: ENVKEEP_ALLOW_HTTP does not stretch to CI tokens
    const http = await runBin(['vaults'], { ...ciEnv, ENVKEEP_BASE_URL: 'http://envkeep.invalid', ENVKEEP_ALLOW_HTTP: '1' }).done
    t.equal(http.code, 4, http.stderr)
    t.match(http.stderr, /goes only over https/)
    const lookalike = await runBin(['vaults'], { ...ciEnv, ENVKEEP_BASE_URL: 'http://127.0.0.1.envkeep.invalid', ENVKEEP_ALLOW_HTTP: '1' }).done
    t.equal(lookalike.code, 4, 'a name that starts like a loopback address is not one')
    t.match(lookalike.stderr, /goes only over https/)
    // <vault> <env> given: the link's URL still passes the https rule
    writeFileSync(
      join(folder, '.envkeep.json'),
      JSON.stringify({ baseUrl: 'http://envkeep.invalid', vault: { id: vaultId, name: 'shop' }, environment: 'development' }),
    )
    const given = await runBin(['pull', 'shop', 'development'], { ENVKEEP_CONFIG_DIR: config }, folder).done
    t.equal(given.code, 2, given.stderr)
    t.match(given.stderr, /refusing plain http to envkeep\.invalid/)
  })

  await t.test('in CI with no token variable, the error names them (issue 25)', async (t) => {
    const bare = { ENVKEEP_BASE_URL: server.baseUrl, ENVKEEP_CONFIG_DIR: config, CI: 'true' }
    for (const args of [
      ['login', '--ci'],
      ['pull', 'shop', 'development'],
    ]) {
      const r = await runBin(args, bare).done
      t.equal(r.code, 4, args.join(' '))
      for (const name of ['ENVKEEP_OIDC_TOKEN', 'ACTIONS_ID_TOKEN_REQUEST_URL', 'ACTIONS_ID_TOKEN_REQUEST_TOKEN', 'id-token: write'])
        t.match(r.stderr, name, `${args[0]}: ${name}`)
    }
  })

  const list = await server.admin(['admin', 'ci', 'list', '--vault', 'shop', '--json'])
  t.equal(JSON.parse(list.stdout).identities.length, 1)
  t.equal((await server.admin(['admin', 'ci', 'remove', '--vault', 'shop', '--name', 'deploy'])).code, 0)
  const after = await runBin(['pull', 'shop', 'development'], ciEnv).done
  t.equal(after.code, 4, 'after removal the identity is refused')
  t.notMatch(server.log(), new RegExp(REQUEST_TOKEN), 'the request token never reaches the server log')
})

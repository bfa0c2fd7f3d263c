import { execFileSync } from 'node:child_process'
import { copyFileSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import dotenv from 'dotenv'
import { NASTY } from './helpers/nasty.js'
import { createPerson, runBin, startRealServer } from './helpers/real-server.js'

/**
 * The built `envkeep` binary against the real self-hosting server on
 * 127.0.0.1: login with the consent page driven over HTTP, pull in each
 * format, run, push of an edge-case file applied on the review page and
 * compared with the dotenv package, status, expired access token, reused
 * refresh token, server down.
 */

// About 30 spawned binaries: ~25 s alone, over a minute when the whole suite runs beside it.
t.setTimeout(300_000)

const PASSWORD = 'canary-person-password-5521'
const CANARY = 'CANARY_value_do_not_print_81c2'

t.test('envkeep against envkeep-server', async (t) => {
  const server = await startRealServer(t)
  const { baseUrl } = server
  const home = mkdtempSync(join(tmpdir(), 'envkeep-cli-home-'))
  t.teardown(() => rmSync(home, { recursive: true, force: true }))
  const configDir = join(home, 'config')
  const env = { ENVKEEP_CONFIG_DIR: configDir, NO_COLOR: '1' }
  const signInsFile = join(configDir, 'sign-ins.json')
  const bin = async (args: string[], cwd?: string) => runBin(args, env, cwd).done

  // Data: a person, a vault "shop" with nasty values in development.
  t.equal((await server.admin(['admin', 'user', 'create', '--email', 'ana@example.com', '--name', 'Ana', '--password-stdin'], PASSWORD)).code, 0)
  const created = await server.admin(['admin', 'vault', 'create', '--name', 'shop', '--owner', 'ana@example.com', '--json'])
  t.equal(created.code, 0, created.stderr)
  const vaultId = (JSON.parse(created.stdout.trim().split('\n').pop()!) as { vault: { id: string } }).vault.id
  const stored: Record<string, string> = { ...NASTY, CANARY_VAR: CANARY }
  for (const [name, value] of Object.entries(stored)) {
    const r = await server.admin(['admin', 'var', 'set', '--vault', 'shop', '--env', 'development', name], `${value}\n`)
    t.equal(r.code, 0, `set ${name}: ${r.stderr}`)
  }
  const person = createPerson(baseUrl, 'ana@example.com', PASSWORD)

  await t.test('a command before login fails at once with exit 4 and says what to run', async (t) => {
    const r = await bin(['vaults', '--base-url', baseUrl])
    t.equal(r.code, 4)
    t.match(r.stderr, `envkeep login --base-url ${baseUrl}`)
  })

  await t.test('login --push: the link is printed, the consent page answered over HTTP, the sign-in stored 0600', async (t) => {
    const login = runBin(['login', '--push', '--no-browser', '--base-url', baseUrl], env)
    const [, link] = await login.waitFor('stderr', /\n\s+(http:\/\/127\.0\.0\.1:\d+\/oauth\/authorize\?\S+)\n/)
    const u = new URL(link!)
    t.equal(u.searchParams.get('code_challenge_method'), 'S256')
    t.equal(u.searchParams.get('resource'), `${baseUrl}/api/env`)
    t.equal(u.searchParams.get('client_id'), `${baseUrl}/cli/oauth-client.json`)
    t.match(u.searchParams.get('redirect_uri'), /^http:\/\/(127\.0\.0\.1|\[::1\]):\d+\/callback$/)
    t.equal(u.searchParams.get('scope'), 'env:read env:push')
    const answer = await person.consent(link!, { push: true })
    t.equal(answer.status, 200)
    const r = await login.done
    t.equal(r.code, 0, r.stderr)
    t.match(r.stderr, /Signed in to .* \(may send \.env files\)/)
    t.equal(statSync(signInsFile).mode & 0o777, 0o600)
    const s = JSON.parse(readFileSync(signInsFile, 'utf8')).signIns[baseUrl]
    t.match(s.accessToken, /^ekat_/)
    t.match(s.refreshToken, /^ekrt_/)
    t.match(s.scope, /env:push/)
    t.notMatch(r.stdout + r.stderr, /ekat_|ekrt_/, 'no token printed')
  })

  await t.test('vaults lists the vault, role and readable environments', async (t) => {
    const r = await bin(['vaults'])
    t.equal(r.code, 0, r.stderr)
    t.match(r.stdout, new RegExp(`shop\\s+${vaultId}\\s+owner\\s+development, preview, production`))
    const j = await bin(['vaults', '--json'])
    t.same(JSON.parse(j.stdout), { vaults: [{ id: vaultId, name: 'shop', role: 'owner', environments: ['development', 'preview', 'production'] }] })
  })

  await t.test('pull in each format reads back exactly what was stored', async (t) => {
    const json = await bin(['pull', 'shop', 'development', '--format', 'json'])
    t.equal(json.code, 0, json.stderr)
    t.same(JSON.parse(json.stdout), stored, 'JSON.parse')

    const de = await bin(['pull', vaultId, 'development'])
    t.equal(de.code, 0, de.stderr)
    t.same(dotenv.parse(de.stdout), stored, 'dotenv.parse of the default format')

    const sh = await bin(['pull', 'shop', 'development', '--format', 'shell', '-o', join(home, 'vars.sh')])
    t.equal(sh.code, 0, sh.stderr)
    t.equal(statSync(join(home, 'vars.sh')).mode & 0o777, 0o600, '-o writes mode 0600')
    t.notMatch(sh.stdout + sh.stderr, CANARY, 'with -o nothing of the values is printed')
    const names = Object.keys(stored)
    const script = `. "$0" && printf '%s\\0' ${names.map((n) => `"$${n}"`).join(' ')}`
    const values = execFileSync('sh', ['-c', script, join(home, 'vars.sh')], { env: { PATH: process.env.PATH }, maxBuffer: 1 << 24 })
      .toString('utf8')
      .split('\0')
      .slice(0, -1)
    t.same(Object.fromEntries(names.map((n, i) => [n, values[i]])), stored, 'a real sh')
  })

  await t.test('run passes the variables, the exit code and the signal through', async (t) => {
    const check = `process.exit(process.env.CANARY_VAR === ${JSON.stringify(CANARY)} && process.env.NEWLINES === ${JSON.stringify(NASTY.NEWLINES)} ? 7 : 3)`
    const r = await bin(['run', 'shop', 'development', '--', process.execPath, '-e', check])
    t.equal(r.code, 7, r.stderr)
    const killed = await bin(['run', 'shop', 'development', '--', 'sh', '-c', 'kill -TERM $$'])
    t.equal(killed.signal, 'SIGTERM', 'killed by the same signal')
    const missing = await bin(['run', 'shop', 'development', '--', 'no-such-command-envkeep'])
    t.equal(missing.code, 127)
  })

  let importId = ''
  let reviewUrl = ''
  const EDGE = [
    '# edge cases', //                                 1
    'export API_URL=https://api.example.com # inline', // 2
    "SINGLE='$HOME stays \\literal'", //               3
    'DOUBLE="a\\nb"', //                               4
    'MULTI="line one', //                              5
    'line two"', //                                    6
    'BACK=`it\'s "quoted"`', //                        7
    'CANARY_VAR=replaced', //                          8
    'bad-name=1', //                                   9
    'EMPTY=', //                                       10
    'not a variable line', //                          11
    'ENVKEEP_SELF=x', //                               12
    'HUGE=' + 'y'.repeat(70_000), //                   13
    'CANARY_VAR=replaced twice', //                    14
    'UNICODE=日本 ✓', //                               15
  ].join('\n')

  await t.test('push an edge-case file: names, overwrites, refused lines, review link', async (t) => {
    writeFileSync(join(home, '.env'), EDGE)
    const dry = await bin(['push', 'shop', 'development', '--dry-run'], home)
    t.equal(dry.code, 0, dry.stderr)
    t.match(dry.stdout, /Nothing was sent/)

    const r = await bin(['push', 'shop', 'development'], home)
    t.equal(r.code, 0, r.stderr)
    const m = /Push id: ([0-9a-f-]{36})/.exec(r.stdout)
    t.ok(m, 'prints the push id')
    importId = m![1]!
    reviewUrl = /Review and apply it at: (\S+)/.exec(r.stdout)![1]!
    t.equal(reviewUrl, `${baseUrl}/v/${vaultId}/variables/imports/${importId}`)
    t.match(r.stdout, /Sent 7 variables/)
    t.match(r.stdout, /CANARY_VAR\s+\(overwrites the current value\)/)
    for (const [line, re] of [
      [8, /duplicate of line 14, which was sent/],
      [9, /bad name/],
      [10, /empty value/],
      [11, /unparseable line/],
      [12, /names beginning with ENVKEEP_/],
      [13, /value over 65,536 bytes/],
    ] as const) {
      t.match(r.stdout, new RegExp(`line ${String(line).padStart(2)}\\s+\\S+\\s+${re.source}`), `line ${line}`)
    }
    t.notMatch(r.stdout + r.stderr, /replaced|api\.example|literal/, 'no pushed value printed')

    const s = await bin(['status', importId, '--json'])
    t.equal(s.code, 0, s.stderr)
    const st = JSON.parse(s.stdout)
    t.equal(st.status, 'pending')
    t.same([...st.names].sort(), ['API_URL', 'BACK', 'CANARY_VAR', 'DOUBLE', 'MULTI', 'SINGLE', 'UNICODE'], 'names')
  })

  await t.test('applied on the review page, the values are what dotenv reads from the file', async (t) => {
    const decided = await person.decide(reviewUrl, 'apply')
    t.equal(decided.res.status, 303)
    const w = await bin(['status', importId, '--wait'])
    t.equal(w.code, 0, w.stderr)
    t.match(w.stdout, /applied/)
    const pulled = JSON.parse((await bin(['pull', 'shop', 'development', '-f', 'json'])).stdout) as Record<string, string>
    const theirs = dotenv.parse(EDGE)
    for (const name of ['API_URL', 'SINGLE', 'DOUBLE', 'MULTI', 'BACK', 'CANARY_VAR', 'UNICODE']) {
      t.equal(pulled[name], theirs[name], `${name} as dotenv reads it`)
    }
    t.notOk('EMPTY' in pulled || 'HUGE' in pulled || 'ENVKEEP_SELF' in pulled)
  })

  await t.test('an expired access token is renewed (the refresh token rotates)', async (t) => {
    const before = JSON.parse(readFileSync(signInsFile, 'utf8')).signIns[baseUrl]
    copyFileSync(signInsFile, join(home, 'sign-ins.before.json'))
    server.clock.ms += 2 * 60 * 60 * 1000 // the server's hour has passed; the CLI still thinks the token is fresh
    const r = await bin(['vaults', '--json'])
    t.equal(r.code, 0, r.stderr)
    const after = JSON.parse(readFileSync(signInsFile, 'utf8')).signIns[baseUrl]
    t.not(after.accessToken, before.accessToken)
    t.not(after.refreshToken, before.refreshToken, 'rotated')
    t.equal(statSync(signInsFile).mode & 0o777, 0o600)
  })

  await t.test('four commands at once with an expired token: one refresh, nobody presents it twice', async (t) => {
    server.clock.ms += 2 * 60 * 60 * 1000
    const before = JSON.parse(readFileSync(signInsFile, 'utf8')).signIns[baseUrl]
    const results = await Promise.all([0, 1, 2, 3].map(() => bin(['vaults', '--json'])))
    t.same(
      results.map((r) => r.code),
      [0, 0, 0, 0],
      results.map((r) => r.stderr).join(''),
    )
    const after = JSON.parse(readFileSync(signInsFile, 'utf8')).signIns[baseUrl]
    t.not(after.refreshToken, before.refreshToken)
    t.equal((await bin(['vaults', '--json'])).code, 0, 'the sign-in is still alive (a reuse would have ended it)')
  })

  await t.test('a reused refresh token ends the sign-in: exit 4 and sign in again', async (t) => {
    // A stale copy of the config presents the refresh token that was already used.
    copyFileSync(join(home, 'sign-ins.before.json'), signInsFile)
    server.clock.ms += 2 * 60 * 60 * 1000
    const r = await bin(['vaults'])
    t.equal(r.code, 4, r.stderr)
    t.match(r.stderr, /has ended/)
    t.match(r.stderr, `envkeep login --base-url ${baseUrl}`)
    t.notMatch(r.stderr, /ekat_|ekrt_/)
    t.same(JSON.parse(readFileSync(signInsFile, 'utf8')).signIns, {}, 'forgotten here')
  })

  await t.test('logout after a new login revokes on the server', async (t) => {
    const login = runBin(['login', '--no-browser', '--base-url', baseUrl], env)
    const [, link] = await login.waitFor('stderr', /\n\s+(http:\/\/127\.0\.0\.1:\d+\/oauth\/authorize\?\S+)\n/)
    await person.consent(link!, { push: false })
    t.equal((await login.done).code, 0)
    const token = JSON.parse(readFileSync(signInsFile, 'utf8')).signIns[baseUrl].accessToken as string
    const push = await bin(['push', 'shop', 'development'], home)
    t.equal(push.code, 4, 'a sign-in without the push right cannot push')
    t.match(push.stderr, /envkeep login --push/)
    const out = await bin(['logout'])
    t.equal(out.code, 0, out.stderr)
    const api = await fetch(`${baseUrl}/api/env/vaults`, { headers: { authorization: `Bearer ${token}` } })
    t.equal(api.status, 401, 'the revoked sign-in is refused by the server')
  })

  await t.test('server down: the host and the failure', async (t) => {
    const login = runBin(['login', '--no-browser', '--base-url', baseUrl], env)
    const [, link] = await login.waitFor('stderr', /\n\s+(http:\/\/127\.0\.0\.1:\d+\/oauth\/authorize\?\S+)\n/)
    await person.consent(link!, { push: false })
    t.equal((await login.done).code, 0)
    await server.stop()
    const r = await bin(['pull', 'shop', 'development'])
    t.equal(r.code, 1)
    t.match(r.stderr, /^error: could not list your vaults\n/)
    t.match(r.stderr, `no answer from ${new URL(baseUrl).host}: connection refused (ECONNREFUSED)`)
  })

  t.notOk(server.log().includes(CANARY), 'the server log holds no value')
  t.notOk(server.log().includes(PASSWORD), 'nor the password')
})

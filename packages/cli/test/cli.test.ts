import { readFile, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import t from 'tap'
import { EXIT } from '../src/exit-codes.js'
import { COMMANDS } from '../src/cli.js'
import { startFakeServer, type FakeServer } from './helpers/fake-server.js'
import { autoBrowser, runCli, tempConfig } from './helpers/run-cli.js'

const VAULT = '3f2a9c1e-0000-4000-8000-000000000001'
const CANARY = 'CANARY_secret_value_4f1d'

async function setup(t: { teardown(fn: () => unknown): void }, opts: { push?: boolean } = {}) {
  const fake = await startFakeServer()
  t.teardown(() => fake.close())
  fake.vaults = [{ id: VAULT, name: 'app', role: 'owner', environments: ['development', 'production'] }]
  fake.variables.set(`${VAULT}/development`, { API_URL: 'https://x', SECRET: CANARY })
  const dir = await tempConfig(t)
  const env = { ENVKEEP_CONFIG_DIR: dir, PATH: process.env.PATH }
  const login = await runCli(['login', '--no-browser', '--base-url', fake.baseUrl, ...(opts.push ? ['--push'] : [])], {
    env,
    openBrowser: async () => {},
    // The person: read the link from stderr as soon as it is printed.
    stderr: linkFollower(),
  })
  if (login.code !== 0) throw new Error(`login failed: ${login.stderr}`)
  return { fake, dir, env }
}

/** A stderr that "clicks" the link the CLI prints. */
function linkFollower(): PassThrough {
  const s = new PassThrough()
  let buf = ''
  const browse = autoBrowser()
  s.on('data', (c: Buffer) => {
    buf += c.toString()
    const m = /\s(https?:\/\/\S+\/oauth\/authorize\S+)/.exec(buf)
    if (m) {
      buf = ''
      void browse(m[1]!)
    }
  })
  return s
}

t.test('--help works on every command and the main help lists them', async (t) => {
  const main = await runCli(['--help'])
  t.equal(main.code, EXIT.ok)
  for (const c of COMMANDS) {
    t.match(main.stdout, c.name)
    const r = await runCli([c.name, '--help'])
    t.equal(r.code, EXIT.ok, c.name)
    t.match(r.stdout, new RegExp(`^Usage: envkeep ${c.name}`), c.name)
    const h = await runCli(['help', c.name])
    t.equal(h.stdout, r.stdout)
  }
})

t.test('bad usage exits 2 and says what was wrong', async (t) => {
  const cases: Array<[string[], RegExp]> = [
    [[], /Usage/],
    [['frobnicate'], /unknown command "frobnicate"/],
    [['pull', 'app'], /pull: give both <vault> and <environment>, or neither/],
    [['pull', 'a', 'b', 'c'], /wrong number of arguments/],
    [['vaults', '--bogus'], /vaults: unknown option --bogus\n {2}options of vaults: --base-url, --help, --json, --verbose/],
    [['vaults', '--jsn'], /unknown option --jsn; did you mean --json\?/],
    [['pul', 'a', 'b'], /unknown command "pul"; did you mean "pull"\?\n {2}commands: login, logout/],
    [['pull', '--format'], /pull: --format needs a value/],
    [['pull', 'a', 'development', '--format', 'jsn', '--base-url', 'http://127.0.0.1:9'], /unknown format "jsn"; did you mean "json"\?/],
    [['completion', 'bsh'], /no completion for "bsh"; did you mean "bash"/],
    [['pull', 'a', 'development', '--format', 'yaml', '--base-url', 'http://127.0.0.1:9'], /unknown format "yaml"/],
    [['status', 'not-a-uuid', '--base-url', 'http://127.0.0.1:9'], /not a push id/],
    [['run', 'a', 'b', '--base-url', 'http://127.0.0.1:9'], /no command to run/],
    [['run', 'a', 'b', 'c'], /put the command after --/],
    [['vaults', '--base-url', 'ftp://x'], /must start with https/],
    [['vaults', '--base-url', 'http://example.com'], /refusing plain http/],
    [['pull', 'a', 'Bad Env!', '--base-url', 'http://127.0.0.1:9'], /not an environment name/],
  ]
  for (const [args, re] of cases) {
    const r = await runCli(args, { env: {} })
    t.equal(r.code, EXIT.usage, args.join(' '))
    t.match(r.stdout + r.stderr, re, args.join(' '))
  }
})

t.test('without a sign-in, commands fail at once with exit 4 and say what to run', async (t) => {
  const dir = await tempConfig(t)
  const fake = await startFakeServer()
  t.teardown(() => fake.close())
  for (const args of [['vaults'], ['pull', 'app', 'development'], ['status', VAULT], ['run', 'app', 'dev', '--', 'true']]) {
    const noServer = await runCli(args, { env: { ENVKEEP_CONFIG_DIR: dir } })
    t.equal(noServer.code, EXIT.needsSignIn, args[0])
    t.match(noServer.stderr, /envkeep login --base-url/)
    const r = await runCli(args, { env: { ENVKEEP_CONFIG_DIR: dir, ENVKEEP_BASE_URL: fake.baseUrl } })
    t.equal(r.code, EXIT.needsSignIn, args[0])
    t.match(r.stderr, `not signed in to ${fake.baseUrl}`)
    t.match(r.stderr, `envkeep login --base-url ${fake.baseUrl}`)
  }
  t.equal(fake.calls.api, 0, 'nothing was asked of the server')
  const login = await runCli(['login', '--base-url', fake.baseUrl], { env: { ENVKEEP_CONFIG_DIR: dir }, isTTY: false })
  t.equal(login.code, EXIT.needsSignIn, 'login without a terminal and without --no-browser does not wait')
  t.match(login.stderr, /--no-browser/)
  t.equal(fake.calls.authorize, 0)
})

t.test('login stores a 0600 sign-in; vaults, pull and logout use it', async (t) => {
  const { fake, dir, env } = await setup(t)
  const file = join(dir, 'sign-ins.json')
  t.equal((await stat(file)).mode & 0o777, 0o600)
  const stored = JSON.parse(await readFile(file, 'utf8'))
  t.equal(stored.current, fake.baseUrl)
  t.match(stored.signIns[fake.baseUrl].accessToken, /^ekat_/)
  t.equal(stored.signIns[fake.baseUrl].scope, 'env:read', 'no push unless asked')

  const v = await runCli(['vaults'], { env })
  t.equal(v.code, 0)
  t.match(v.stdout, /NAME\s+ID\s+ROLE\s+ENVIRONMENTS/)
  t.match(v.stdout, new RegExp(`app\\s+${VAULT}\\s+owner\\s+development, production`))
  const vj = await runCli(['vaults', '--json'], { env })
  t.same(JSON.parse(vj.stdout), { vaults: fake.vaults })

  for (const args of [
    ['pull', 'app', 'development', '--format', 'json'],
    ['pull', VAULT, 'development', '-f', 'json'],
  ]) {
    const p = await runCli(args, { env })
    t.equal(p.code, 0)
    t.same(JSON.parse(p.stdout), { API_URL: 'https://x', SECRET: CANARY })
  }
  const o = await runCli(['pull', 'app', 'development', '-o', 'out.env'], { env, cwd: dir })
  t.equal(o.code, 0)
  t.equal((await stat(join(dir, 'out.env'))).mode & 0o777, 0o600)
  t.notMatch(o.stdout + o.stderr, CANARY, 'a value is only written where asked')

  const out = await runCli(['logout'], { env })
  t.equal(out.code, 0)
  t.equal(fake.calls.revoke, 1)
  t.same(JSON.parse(await readFile(file, 'utf8')).signIns, {})
  const after = await runCli(['vaults', '--base-url', fake.baseUrl], { env })
  t.equal(after.code, EXIT.needsSignIn)
})

t.test('a new login revokes the sign-in it replaces', async (t) => {
  const { fake, env } = await setup(t)
  t.equal(fake.calls.revoke, 0)
  const again = await runCli(['login', '--no-browser'], { env, stderr: linkFollower() })
  t.equal(again.code, 0, again.stderr)
  t.equal(fake.calls.revoke, 1)
  t.equal((await runCli(['vaults'], { env })).code, 0, 'the new sign-in works')
})

t.test('tokens never reach the output', async (t) => {
  const { fake, dir, env } = await setup(t)
  const stored = JSON.parse(await readFile(join(dir, 'sign-ins.json'), 'utf8')).signIns[fake.baseUrl]
  fake.expireAccessTokens()
  const outputs: string[] = []
  for (const args of [['vaults'], ['pull', 'app', 'nope'], ['status', VAULT], ['logout']]) {
    const r = await runCli(args, { env })
    outputs.push(r.stdout, r.stderr)
  }
  const all = outputs.join('\n')
  t.notMatch(all, stored.accessToken)
  t.notMatch(all, stored.refreshToken)
  t.notMatch(all, /ekat_|ekrt_/)
})

t.test('an expired access token is renewed once, even by concurrent commands', async (t) => {
  const { fake, env } = await setup(t)
  fake.expireAccessTokens()
  const results = await Promise.all(Array.from({ length: 5 }, () => runCli(['vaults', '--json'], { env })))
  t.same(
    results.map((r) => r.code),
    [0, 0, 0, 0, 0],
  )
  t.equal(fake.calls.refresh, 1, 'one refresh for five commands')
  t.equal(fake.calls.reuse, 0, 'no refresh token presented twice')
})

t.test('an access token past its expiry time is renewed before use', async (t) => {
  const { fake, env } = await setup(t)
  const later = new Date(Date.now() + 2 * 3600_000)
  const r = await runCli(['vaults'], { env, now: () => later })
  t.equal(r.code, 0)
  t.equal(fake.calls.refresh, 1)
})

t.test('a refused refresh (reused token) exits 4, says to sign in again and forgets the sign-in', async (t) => {
  const { fake, dir, env } = await setup(t)
  const file = join(dir, 'sign-ins.json')
  const before = await readFile(file, 'utf8')
  fake.expireAccessTokens()
  t.equal((await runCli(['vaults'], { env })).code, 0, 'first renewal works')
  // Put back the old refresh token, as a copied config would: presenting it again is reuse.
  const { writeFile } = await import('node:fs/promises')
  await writeFile(file, before)
  fake.expireAccessTokens()
  const r = await runCli(['vaults'], { env })
  t.equal(r.code, EXIT.needsSignIn)
  t.match(r.stderr, /sign-in to .* has ended/)
  t.match(r.stderr, `envkeep login --base-url ${fake.baseUrl}`)
  t.match(r.stderr, /ref:\s+OAUTHREF01/)
  t.equal(fake.calls.reuse, 1)
  t.same(JSON.parse(await readFile(file, 'utf8')).signIns, {}, 'the ended sign-in is forgotten')
})

t.test('429 on a read: waits Retry-After once and says so; a second 429 fails', async (t) => {
  const { fake, env } = await setup(t)
  const slept: number[] = []
  fake.rateLimit(1, 7)
  const r = await runCli(['vaults'], { env, sleep: async (ms) => void slept.push(ms) })
  t.equal(r.code, 0)
  t.same(slept, [7000])
  t.match(r.stderr, /waiting 7 s/)
  fake.rateLimit(2, 3)
  const r2 = await runCli(['vaults'], { env, sleep: async (ms) => void slept.push(ms) })
  t.equal(r2.code, EXIT.failure)
  t.match(r2.stderr, /rate_limited/)
  t.match(r2.stderr, /try again in 3 s/)
})

t.test('server errors: the CLI sentence, then reason, where and ref', async (t) => {
  const { env } = await setup(t)
  const r = await runCli(['pull', 'app', 'staging'], { env })
  t.equal(r.code, EXIT.failure)
  const lines = r.stderr.split('\n')
  t.match(lines[0], /^error: vault "app" has no environment "staging" that you may read/)
  t.match(r.stderr, /environments you may read: /)
  t.match(lines[1], /reason: reading staging of vault 3f2a9c1e: no such environment \(not_found, HTTP 404\)/)
  t.match(r.stderr, /where:\s+env API/)
  t.match(r.stderr, /ref:\s+REF1234567/)
  const missing = await runCli(['pull', 'nope', 'development'], { env })
  t.equal(missing.code, EXIT.failure)
  t.match(missing.stderr, /no vault named "nope"/)
})

t.test('no answer: the host and the failure', async (t) => {
  const { fake, env } = await setup(t)
  const host = new URL(fake.baseUrl).host
  await fake.close()
  const r = await runCli(['vaults'], { env })
  t.equal(r.code, EXIT.failure)
  t.match(r.stderr, `no answer from ${host}: connection refused (ECONNREFUSED)`)
  const dns = await runCli(['vaults', '--base-url', 'https://envkeep.invalid'], { env: { ...env } })
  t.equal(dns.code, EXIT.needsSignIn, 'not signed in there')
  const l = await runCli(['login', '--no-browser', '--base-url', 'https://envkeep.invalid'], { env })
  t.equal(l.code, EXIT.failure)
  t.match(l.stderr, /no answer from envkeep.invalid: DNS lookup failed/)
})

t.test('NO_COLOR is honoured; colour only on a terminal', async (t) => {
  const tty = () => Object.assign(new PassThrough(), { isTTY: true })
  const read = (s: PassThrough) => {
    const chunks: Buffer[] = []
    s.on('data', (c: Buffer) => chunks.push(c))
    return () => Buffer.concat(chunks).toString()
  }
  const a = tty()
  const ra = read(a)
  await runCli(['frobnicate'], { env: {}, stderr: a })
  t.match(ra(), '\u001b[31m', 'coloured on a terminal')
  const b = tty()
  const rb = read(b)
  await runCli(['frobnicate'], { env: { NO_COLOR: '1' }, stderr: b })
  t.notMatch(rb(), '\u001b[')
  const c = await runCli(['frobnicate'], { env: {} })
  t.notMatch(c.stderr, '\u001b[', 'not a terminal: no colour')
})

t.test('login checks state and iss, and a declined consent exits 4', async (t) => {
  const fake = await startFakeServer()
  t.teardown(() => fake.close())
  const dir = await tempConfig(t)
  const env = { ENVKEEP_CONFIG_DIR: dir }
  fake.consent.iss = 'https://evil.example'
  const bad = await runCli(['login', '--no-browser', '--base-url', fake.baseUrl], { env, stderr: linkFollower() })
  t.equal(bad.code, EXIT.failure)
  t.match(bad.stderr, /unexpected "iss"/)
  fake.consent.iss = null
  fake.consent.deny = true
  const denied = await runCli(['login', '--no-browser', '--base-url', fake.baseUrl], { env, stderr: linkFollower() })
  t.equal(denied.code, EXIT.needsSignIn)
  t.same(JSON.parse(await readFile(join(dir, 'sign-ins.json'), 'utf8').catch(() => '{"signIns":{}}')).signIns, {})
})

t.test('push: sends good lines, lists refused ones, shows overwrites and the review link; --wait follows it', async (t) => {
  const { fake, dir, env } = await setup(t, { push: true })
  const { writeFile } = await import('node:fs/promises')
  await writeFile(join(dir, '.env'), `# comment\nAPI_URL=https://new\nNEW="multi\nline"\nbad-name=1\nEMPTY=\nAPI_URL=https://newer\n`)
  const dry = await runCli(['push', 'app', 'development', '--dry-run'], { env, cwd: dir })
  t.equal(dry.code, 0)
  t.match(dry.stdout, /would send 2 variables/)
  t.match(dry.stdout, /Nothing was sent/)
  t.equal(fake.imports.size, 0)

  const r = await runCli(['push', 'app', 'development', '--wait'], { env, cwd: dir })
  t.equal(r.code, 0, r.stderr)
  t.match(r.stdout, /Sent 2 variables/)
  t.match(r.stdout, /API_URL\s+\(overwrites the current value\)/)
  t.match(r.stdout, /line 2\s+API_URL\s+duplicate of line 7, which was sent/)
  t.match(r.stdout, /line 5\s+bad-name\s+bad name/)
  t.match(r.stdout, /line 6\s+EMPTY\s+empty value/)
  t.match(r.stdout, new RegExp(`Review and apply it at: ${fake.baseUrl}/v/${VAULT}/variables/imports/`))
  t.match(r.stdout, /: applied/)
  const [id, im] = [...fake.imports.entries()][0]!
  t.same(im.refused, [
    { line: 2, name: 'API_URL', reason: 'duplicate of line 7, which was sent' },
    { line: 5, name: 'bad-name', reason: 'bad name: use letters, digits and underscores, not starting with a digit' },
    { line: 6, name: 'EMPTY', reason: 'empty value' },
  ])
  t.notMatch(r.stdout + r.stderr, /https:\/\/newer|multi/, 'no values printed')

  const s = await runCli(['status', id, '--json'], { env })
  t.equal(s.code, 0)
  t.equal(JSON.parse(s.stdout).status, 'applied')
  im.status = 'pending'
  im.outcome = 'rejected'
  im.polls = 0
  const w = await runCli(['status', id, '--wait'], { env })
  t.equal(w.code, EXIT.failure, 'rejected: exit 1')
  t.match(w.stdout, /rejected/)
})

t.test('push without the push right: exit 4 and how to sign in with it', async (t) => {
  const { dir, env } = await setup(t)
  const { writeFile } = await import('node:fs/promises')
  await writeFile(join(dir, '.env'), 'A=1\n')
  const r = await runCli(['push', 'app', 'development'], { env, cwd: dir })
  t.equal(r.code, EXIT.needsSignIn)
  t.match(r.stderr, /envkeep login --push/)
})

t.test('set: a value on stdin that is not UTF-8 is refused, nothing sent (issue 25)', async (t) => {
  const { fake, dir, env } = await setup(t, { push: true })
  const { PassThrough } = await import('node:stream')
  for (const bytes of [[0xff], [0xed, 0xa0, 0x80]]) {
    const stdin = new PassThrough()
    stdin.end(Buffer.concat([Buffer.from('canary-'), Buffer.from(bytes)]))
    const r = await runCli(['set', 'app', 'development', 'API_KEY'], { env, cwd: dir, stdin })
    t.equal(r.code, EXIT.failure)
    t.match(r.stderr, /stdin is not UTF-8 text; nothing was sent/)
  }
  t.equal(fake.imports.size, 0, 'nothing was sent')
})

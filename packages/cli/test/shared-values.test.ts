import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { createPerson, formsOf, runBin, startRealServer } from './helpers/real-server.js'

// Issue 24 through the built binaries against the real server: references made with
// `admin var set --ref` and `envkeep set --ref`, pulled byte for byte; a pushed ${X} stays text.

t.setTimeout(300_000)

const PASSWORD = 'canary-shared-values-password'
const PROD_URL = 'postgres://app:canary-prod-ünï 🔐@db/shop\nsecond line "q" \'s\''
const PREVIEW_API = 'https://preview.example/api?x=1&y=${NOT_EXPANDED}'

t.test('references and literal ${X}, from the command line', async (t) => {
  const server = await startRealServer(t)
  const { baseUrl } = server
  const home = mkdtempSync(join(tmpdir(), 'envkeep-shared-'))
  t.teardown(() => rmSync(home, { recursive: true, force: true }))
  const project = join(home, 'project')
  mkdirSync(project, { recursive: true })
  const env = { ENVKEEP_CONFIG_DIR: join(home, 'config'), NO_COLOR: '1', ENVKEEP_FALLBACK_KEYRING: '0' }
  const bin = async (args: string[]) => runBin(args, env, project).done

  t.equal((await server.admin(['admin', 'user', 'create', '--email', 'ana@example.com', '--name', 'Ana', '--password-stdin'], PASSWORD)).code, 0)
  const created = await server.admin(['admin', 'vault', 'create', '--name', 'shop', '--owner', 'ana@example.com', '--json'])
  t.equal(created.code, 0)
  const vaultId = (JSON.parse(created.stdout.trim().split('\n').pop()!) as { vault: { id: string } }).vault.id
  t.equal((await server.admin(['admin', 'var', 'set', '--vault', 'shop', '--env', 'production', 'DATABASE_URL'], PROD_URL)).code, 0)
  t.equal((await server.admin(['admin', 'var', 'set', '--vault', 'shop', '--env', 'preview', 'API'], PREVIEW_API)).code, 0)
  const ref = await server.admin(['admin', 'var', 'set', '--vault', 'shop', '--env', 'development', 'DB_URL', '--ref', 'production.DATABASE_URL'])
  t.equal(ref.code, 0, ref.stderr)
  t.match(ref.stdout, /DB_URL set as a reference to production\.DATABASE_URL/)
  // refused when written: a cycle, a target that does not exist
  const cycle = await server.admin(['admin', 'var', 'set', '--vault', 'shop', '--env', 'production', 'DATABASE_URL', '--ref', 'development.DB_URL'])
  t.equal(cycle.code, 1)
  t.match(cycle.stderr, /a cycle/)
  const dangling = await server.admin(['admin', 'var', 'set', '--vault', 'shop', '--env', 'development', 'X', '--ref', 'production.NOPE'])
  t.equal(dangling.code, 1)
  t.match(dangling.stderr, /production\.NOPE does not exist/)

  const person = createPerson(baseUrl, 'ana@example.com', PASSWORD)
  const login = runBin(['login', '--push', '--no-browser', '--base-url', baseUrl], env)
  const [, link] = await login.waitFor('stderr', /\n\s+(http:\/\/127\.0\.0\.1:\d+\/oauth\/authorize\?\S+)\n/)
  await person.consent(link!, { push: true })
  t.equal((await login.done).code, 0)
  t.equal((await bin(['link', 'shop', 'development'])).code, 0)

  // a .env holding ${X} is pushed and stored as the literal text
  writeFileSync(join(project, '.env'), 'LIT=${DATABASE_URL}\nBARE=$DATABASE_URL\n')
  const pushed = await bin(['push', '.env'])
  t.equal(pushed.code, 0, pushed.stderr)
  await person.decide(/Review and apply it at: (\S+)/.exec(pushed.stdout)![1]!, 'apply')

  // envkeep set NAME --ref: a push holding a reference, applied on the review page
  const set = await bin(['set', 'API_URL', '--ref', 'preview.API'])
  t.equal(set.code, 0, set.stderr)
  t.match(set.stdout, /Sent API_URL as a reference to preview\.API/)
  const review = /Review and apply it at: (\S+)/.exec(set.stdout)![1]!
  t.equal((await person.decide(review, 'apply')).res.status, 303)
  const badRef = await bin(['set', 'NOPE', '--ref', 'not a target'])
  t.equal(badRef.code, 2)

  const pulled = await bin(['pull', '--json'])
  t.equal(pulled.code, 0, pulled.stderr)
  const values = JSON.parse(pulled.stdout) as Record<string, string>
  t.same(Object.keys(values), ['API_URL', 'BARE', 'DB_URL', 'LIT'])
  const expected: Record<string, string> = { API_URL: PREVIEW_API, BARE: '$DATABASE_URL', DB_URL: PROD_URL, LIT: '${DATABASE_URL}' }
  for (const [k, v] of Object.entries(expected)) t.ok(Buffer.from(values[k]!, 'utf8').equals(Buffer.from(v, 'utf8')), `${k} byte for byte`)

  // personal overrides: allowed on the Settings page, then set, pulled and unset from the command line
  const refused = await bin(['set', 'LIT', '--personal', '--value', 'mine'])
  t.equal(refused.code, 1, 'not allowed yet')
  const settings = await person.get(`/v/${vaultId}/settings`)
  const allow = formsOf(settings.body).find((f) => f.action.endsWith('/settings/overrides') && f.fields.environment === 'development')!
  t.equal((await person.post(allow.action, allow.fields)).res.status, 303)
  const mine = 'my own ${DATABASE_URL} ✓'
  const personal = await bin(['set', 'LIT', '--personal', '--value', mine])
  t.equal(personal.code, 0, personal.stderr)
  t.match(personal.stdout, /Your own value of LIT in development is set/)
  const withOverride = await bin(['pull', '--json'])
  t.equal(withOverride.code, 0, withOverride.stderr)
  const got = JSON.parse(withOverride.stdout) as Record<string, string>
  t.ok(Buffer.from(got.LIT!, 'utf8').equals(Buffer.from(mine, 'utf8')), 'the override, byte for byte')
  t.ok(Buffer.from(got.DB_URL!, 'utf8').equals(Buffer.from(PROD_URL, 'utf8')), 'the rest as before')
  t.match(withOverride.stderr, /From your personal overrides \(yours only\): LIT\n/)
  t.notMatch(withOverride.stderr, /my own/)
  const unset = await bin(['unset', 'LIT', '--personal'])
  t.equal(unset.code, 0, unset.stderr)
  const after = await bin(['pull', '--json'])
  t.equal(JSON.parse(after.stdout).LIT, '${DATABASE_URL}')
  t.notMatch(after.stderr, /personal overrides/)
})

import t from 'tap'
import { DEFAULT_PLANS, loadConfig, SETTINGS, UsageError } from '../src/config.js'
import { helpText } from '../src/main.js'
import { runCli, tempDir } from './helpers.js'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

const KEY = Buffer.alloc(32, 7).toString('base64url')

t.test('defaults are the spec values', async (t) => {
  const c = loadConfig({}, {}, '/srv/app')
  t.equal(c.host, '127.0.0.1')
  t.equal(c.port, 8080)
  t.equal(c.dataDir, '/srv/app/.envkeep')
  t.equal(c.databaseFile, '/srv/app/.envkeep/envkeep.db')
  t.equal(c.baseUrl, 'http://127.0.0.1:8080')
  t.equal(c.basePath, '')
  t.equal(c.masterKeyFromEnv, null)
  t.equal(c.masterKeyFile, '/srv/app/.envkeep/master.key')
  t.equal(c.masterKeyFileExplicit, false)
  t.equal(c.ratePerMinute, 60)
  t.equal(c.ratePerDay, 5000)
  t.equal(c.importTtlSeconds, 7 * 86_400)
  t.same(c.plans, DEFAULT_PLANS)
  t.same(c.plans['self-hosted'], { maxVariables: 10_000, maxBytes: 20 * 1024 * 1024 })
  t.equal(c.logLevel, 'info')
  t.equal(c.trustProxy, false)
  t.ok(Object.isFrozen(c))
})

t.test('every setting from the environment', async (t) => {
  const c = loadConfig(
    {},
    {
      ENVKEEP_HOST: '0.0.0.0',
      ENVKEEP_PORT: '9090',
      ENVKEEP_DATA_DIR: '/var/lib/envkeep',
      ENVKEEP_BASE_URL: 'https://keep.example.com/team/',
      ENVKEEP_MASTER_KEY: KEY,
      ENVKEEP_RATE_PER_MINUTE: '10',
      ENVKEEP_RATE_PER_DAY: '100',
      ENVKEEP_IMPORT_TTL: '3600',
      ENVKEEP_PLANS: '{"big":{"maxVariables":50000,"maxBytes":104857600}}',
      ENVKEEP_LOG_LEVEL: 'warn',
      ENVKEEP_TRUST_PROXY: '1',
    },
    '/x',
  )
  t.equal(c.host, '0.0.0.0')
  t.equal(c.port, 9090)
  t.equal(c.dataDir, '/var/lib/envkeep')
  t.equal(c.baseUrl, 'https://keep.example.com/team')
  t.equal(c.basePath, '/team')
  t.same(Buffer.from(c.masterKeyFromEnv!), Buffer.alloc(32, 7))
  t.equal(c.ratePerMinute, 10)
  t.equal(c.ratePerDay, 100)
  t.equal(c.importTtlSeconds, 3600)
  t.same(c.plans.big, { maxVariables: 50_000, maxBytes: 104_857_600 })
  t.ok(c.plans['self-hosted'], 'the default plan stays')
  t.equal(c.logLevel, 'warn')
  t.equal(c.trustProxy, 1)
})

t.test('flags win over the environment; the key file setting; wildcard host → loopback base URL', async (t) => {
  const c = loadConfig(
    { host: '::', port: '7000', 'data-dir': 'data', 'base-url': undefined },
    { ENVKEEP_PORT: '9090', ENVKEEP_DATA_DIR: '/elsewhere', ENVKEEP_MASTER_KEY_FILE: 'keys/k' },
    '/srv',
  )
  t.equal(c.port, 7000)
  t.equal(c.dataDir, '/srv/data')
  t.equal(c.baseUrl, 'http://127.0.0.1:7000')
  t.equal(c.masterKeyFile, '/srv/keys/k')
  t.equal(c.masterKeyFileExplicit, true)
  t.equal(loadConfig({ host: '::1' }, {}, '/').baseUrl, 'http://[::1]:8080')
  t.equal(loadConfig({}, { ENVKEEP_PORT: '' }, '/').port, 8080, 'empty means unset')
})

const BAD: readonly [string, Record<string, string>, Record<string, string>, RegExp][] = [
  ['port not a number', {}, { ENVKEEP_PORT: 'http' }, /ENVKEEP_PORT/],
  ['port 0', {}, { ENVKEEP_PORT: '0' }, /ENVKEEP_PORT/],
  ['port too big', { port: '70000' }, {}, /--port/],
  ['port negative', {}, { ENVKEEP_PORT: '-1' }, /ENVKEEP_PORT/],
  ['host with a slash', {}, { ENVKEEP_HOST: 'a/b' }, /ENVKEEP_HOST/],
  ['base URL relative', {}, { ENVKEEP_BASE_URL: 'keep.example.com' }, /ENVKEEP_BASE_URL/],
  ['base URL ftp', {}, { ENVKEEP_BASE_URL: 'ftp://keep.example.com' }, /ENVKEEP_BASE_URL/],
  ['base URL with query', { 'base-url': 'https://k.example.com/?a=1' }, {}, /query/],
  ['key not base64url', {}, { ENVKEEP_MASTER_KEY: 'not a key!' }, /ENVKEEP_MASTER_KEY must be 32 bytes/],
  ['key too short', {}, { ENVKEEP_MASTER_KEY: Buffer.alloc(16).toString('base64url') }, /32 bytes/],
  ['key and key file', {}, { ENVKEEP_MASTER_KEY: KEY, ENVKEEP_MASTER_KEY_FILE: '/k' }, /not both/],
  ['rate per minute 0', {}, { ENVKEEP_RATE_PER_MINUTE: '0' }, /ENVKEEP_RATE_PER_MINUTE/],
  ['rate per minute fraction', {}, { ENVKEEP_RATE_PER_MINUTE: '1.5' }, /ENVKEEP_RATE_PER_MINUTE/],
  ['rate per day words', {}, { ENVKEEP_RATE_PER_DAY: 'lots' }, /ENVKEEP_RATE_PER_DAY/],
  ['import ttl too short', {}, { ENVKEEP_IMPORT_TTL: '5' }, /ENVKEEP_IMPORT_TTL/],
  ['import ttl words', {}, { ENVKEEP_IMPORT_TTL: '7d' }, /ENVKEEP_IMPORT_TTL/],
  ['plans not JSON', {}, { ENVKEEP_PLANS: '{big' }, /ENVKEEP_PLANS must be JSON/],
  ['plans an array', {}, { ENVKEEP_PLANS: '[]' }, /ENVKEEP_PLANS/],
  ['plan missing a limit', {}, { ENVKEEP_PLANS: '{"big":{"maxVariables":5}}' }, /maxBytes/],
  ['plan negative limit', {}, { ENVKEEP_PLANS: '{"big":{"maxVariables":-5,"maxBytes":1}}' }, /positive/],
  ['plan extra field', {}, { ENVKEEP_PLANS: '{"big":{"maxVariables":5,"maxBytes":1,"x":1}}' }, /exactly/],
  ['plan bad name', {}, { ENVKEEP_PLANS: '{"Big Plan":{"maxVariables":5,"maxBytes":1}}' }, /plan names/],
  ['log level', {}, { ENVKEEP_LOG_LEVEL: 'loud' }, /ENVKEEP_LOG_LEVEL/],
  ['trust proxy', {}, { ENVKEEP_TRUST_PROXY: 'maybe' }, /ENVKEEP_TRUST_PROXY/],
  ['trust proxy true', {}, { ENVKEEP_TRUST_PROXY: 'true' }, /would believe any X-Forwarded-For.*number of proxy hops/],
  ['trust proxy *', {}, { ENVKEEP_TRUST_PROXY: '*' }, /would believe any X-Forwarded-For/],
  ['trust proxy hops', {}, { ENVKEEP_TRUST_PROXY: '11' }, /1 to 10/],
  ['trust proxy CIDR', {}, { ENVKEEP_TRUST_PROXY: '10.0.0.0/33' }, /not a number of hops, an IP address or a CIDR/],
  ['trust proxy host name', {}, { ENVKEEP_TRUST_PROXY: 'proxy.internal' }, /not a number of hops/],
]

t.test('ENVKEEP_TRUST_PROXY takes hops or addresses and CIDRs', async (t) => {
  t.equal(loadConfig({}, { ENVKEEP_TRUST_PROXY: '2' }, '/').trustProxy, 2)
  t.same(loadConfig({}, { ENVKEEP_TRUST_PROXY: '127.0.0.1, 10.0.0.0/8,::1,fd00::/8,loopback' }, '/').trustProxy, [
    '127.0.0.1',
    '10.0.0.0/8',
    '::1',
    'fd00::/8',
    'loopback',
  ])
  t.equal(loadConfig({}, { ENVKEEP_TRUST_PROXY: 'false' }, '/').trustProxy, false)
})

for (const [label, flags, env, message] of BAD) {
  t.test(`bad setting: ${label}`, async (t) => {
    t.throws(() => loadConfig(flags, env, '/'), { name: 'UsageError', message })
  })
}

t.test('a bad key is never repeated in the error', async (t) => {
  const canary = 'canary_key_material_that_must_not_print!!'
  try {
    loadConfig({}, { ENVKEEP_MASTER_KEY: canary }, '/')
    t.fail('should throw')
  } catch (err) {
    t.type(err, UsageError)
    t.notOk((err as Error).message.includes(canary))
  }
})

t.test('a bad setting: exit 2, a clear message, nothing started or created', async (t) => {
  const dir = tempDir(t)
  const data = join(dir, 'data')
  for (const argv of [['start'], ['init']]) {
    const r = await runCli(argv, { ENVKEEP_DATA_DIR: data, ENVKEEP_RATE_PER_DAY: 'many' }, '', dir)
    t.equal(r.code, 2, argv.join(' '))
    t.match(r.stderr, /ENVKEEP_RATE_PER_DAY must be a whole number/)
    t.notOk(existsSync(data), 'no data directory made')
  }
  const unknown = await runCli(['start', '--prot', '80'], { ENVKEEP_DATA_DIR: data }, '', dir)
  t.equal(unknown.code, 2)
  t.match(unknown.stderr, /prot/)
  t.equal((await runCli(['serve'], {}, '', dir)).code, 2, 'unknown command')
  t.equal((await runCli([], {}, '', dir)).code, 2, 'no command')
})

t.test('--help and the README list every setting', async (t) => {
  const help = await runCli(['--help'], {})
  t.equal(help.code, 0)
  t.equal(help.stdout, helpText())
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
  const rootReadme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8')
  for (const s of SETTINGS) {
    t.ok(help.stdout.includes(s.env), `help: ${s.env}`)
    if (s.flag) t.ok(help.stdout.includes(s.flag), `help: ${s.flag}`)
    t.ok(readme.includes(s.env), `server README: ${s.env}`)
    t.ok(rootReadme.includes(s.env), `root README: ${s.env}`)
  }
  for (const cmd of [
    'init',
    'start',
    'admin user create',
    'admin vault create',
    'admin member add',
    'admin env create',
    'admin var set',
    'admin var list',
    'admin rotate-master-key',
    'admin signins revoke',
  ])
    t.ok(help.stdout.includes(cmd), `help: ${cmd}`)
})

t.test('ENVKEEP_SMTP_URL and ENVKEEP_SMTP_FROM: both or neither; errors never repeat the URL', async (t) => {
  const secret = 'canary-smtp-pass'
  t.equal(loadConfig({}, {}, '/srv').smtp, null)
  const c = loadConfig({}, { ENVKEEP_SMTP_URL: `smtps://u:${secret}@mail.example.com:465`, ENVKEEP_SMTP_FROM: ' envkeep <keep@example.com> ' }, '/srv')
  t.same(c.smtp, { url: `smtps://u:${secret}@mail.example.com:465`, from: 'envkeep <keep@example.com>' })
  t.equal(loadConfig({}, { ENVKEEP_SMTP_URL: 'smtp://mail.example.com', ENVKEEP_SMTP_FROM: 'keep@example.com' }, '/srv').smtp?.from, 'keep@example.com')
  const refused: [Record<string, string>, RegExp][] = [
    [{ ENVKEEP_SMTP_URL: `smtp://u:${secret}@mail.example.com:587` }, /ENVKEEP_SMTP_FROM must name the sender/],
    [{ ENVKEEP_SMTP_FROM: 'keep@example.com' }, /ENVKEEP_SMTP_URL is not/],
    [{ ENVKEEP_SMTP_URL: `https://u:${secret}@mail.example.com`, ENVKEEP_SMTP_FROM: 'keep@example.com' }, /must start with smtp:\/\//],
    [{ ENVKEEP_SMTP_URL: `not a url ${secret}`, ENVKEEP_SMTP_FROM: 'keep@example.com' }, /must be a URL like/],
    [{ ENVKEEP_SMTP_URL: `smtp://u:${secret}@mail.example.com?debug=true`, ENVKEEP_SMTP_FROM: 'keep@example.com' }, /logger and debug options are refused/],
    [{ ENVKEEP_SMTP_URL: `smtp://u:${secret}@mail.example.com?logger=true`, ENVKEEP_SMTP_FROM: 'keep@example.com' }, /logger and debug options are refused/],
    [{ ENVKEEP_SMTP_URL: 'smtp://mail.example.com', ENVKEEP_SMTP_FROM: 'not an address' }, /ENVKEEP_SMTP_FROM must be an email address/],
    [{ ENVKEEP_SMTP_URL: 'smtp://mail.example.com', ENVKEEP_SMTP_FROM: 'a@b.c\nBcc: x@y.z' }, /ENVKEEP_SMTP_FROM must be an email address/],
  ]
  for (const [env, re] of refused) {
    const err = (() => {
      try {
        loadConfig({}, env, '/srv')
      } catch (e) {
        return e
      }
      return null
    })()
    t.ok(err instanceof UsageError, JSON.stringify(Object.keys(env)))
    t.match((err as Error).message, re)
    t.notOk((err as Error).message.includes(secret), 'the password is not repeated')
  }
})

t.test('ENVKEEP_WEBHOOK_ALLOW_PRIVATE: false by default, true or false only', async (t) => {
  t.equal(loadConfig({}, {}, '/').webhookAllowPrivate, false)
  t.equal(loadConfig({}, { ENVKEEP_WEBHOOK_ALLOW_PRIVATE: 'true' }, '/').webhookAllowPrivate, true)
  t.equal(loadConfig({}, { ENVKEEP_WEBHOOK_ALLOW_PRIVATE: 'false' }, '/').webhookAllowPrivate, false)
  t.throws(() => loadConfig({}, { ENVKEEP_WEBHOOK_ALLOW_PRIVATE: 'yes' }, '/'), {
    name: 'UsageError',
    message: 'ENVKEEP_WEBHOOK_ALLOW_PRIVATE must be true or false',
  })
})

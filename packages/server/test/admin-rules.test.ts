import t, { type Test } from 'tap'
import { variableMetas } from '@envkeep/env-api-plugin/testing'
import { join } from 'node:path'
import { createSqliteStorage } from '@envkeep/storage-sqlite'
import { runCli, tempDir } from './helpers.js'

// The admin commands use the pages' rules (the plugin's domain layer) and
// are logged as the server administrator. Hardening findings 8 (`member add
// --role viewer` demoted the last owner with no check) and 5 (`var set`
// wrote past the plan's storage limit).

const PASSWORD = 'canary-admin-password-1234'

async function setUp(t: Test, extraEnv: Record<string, string> = {}) {
  const dir = tempDir(t)
  const env = { ENVKEEP_DATA_DIR: join(dir, 'data'), ...extraEnv }
  const cli = (argv: string[], input: string | Buffer = '') => runCli(argv, env, input, dir)
  t.equal((await cli(['init'])).code, 0)
  for (const [email, name] of [
    ['ana@example.com', 'Ana'],
    ['bo@example.com', 'Bo'],
  ] as const) {
    t.equal((await cli(['admin', 'user', 'create', '--email', email, '--name', name, '--password-stdin'], `${PASSWORD}-${name}`)).code, 0)
  }
  const vault = await cli(['admin', 'vault', 'create', '--name', 'shop', '--owner', 'ana@example.com', '--json'])
  t.equal(vault.code, 0, vault.stderr)
  const vaultId = (JSON.parse(vault.stdout.trim()) as { vault: { id: string } }).vault.id
  const look = async <T>(fn: (s: Awaited<ReturnType<typeof createSqliteStorage>>) => Promise<T>): Promise<T> => {
    const storage = await createSqliteStorage({ filename: join(dir, 'data', 'envkeep.db') })
    try {
      return await fn(storage)
    } finally {
      await storage.close()
    }
  }
  return { cli, vaultId, look }
}

t.test('admin member add/remove keep the last owner, and are logged as the server administrator', async (t) => {
  const { cli, vaultId, look } = await setUp(t)
  const demote = await cli(['admin', 'member', 'add', '--vault', 'shop', '--email', 'ana@example.com', '--role', 'viewer'])
  t.equal(demote.code, 1, 'the last owner cannot be made viewer')
  t.match(demote.stderr, 'a vault must keep at least one owner')
  const remove = await cli(['admin', 'member', 'remove', '--vault', 'shop', '--email', 'ana@example.com'])
  t.equal(remove.code, 1, 'nor removed')
  t.match(remove.stderr, 'the last owner cannot be removed')
  t.same(await look(async (s) => (await s.listMembers(vaultId)).map((m) => m.role)), ['owner'], 'Ana is still owner')

  t.equal((await cli(['admin', 'member', 'add', '--vault', 'shop', '--email', 'bo@example.com', '--role', 'owner'])).code, 0)
  t.equal((await cli(['admin', 'member', 'add', '--vault', 'shop', '--email', 'ana@example.com', '--role', 'viewer'])).code, 0, 'with a second owner, yes')
  t.equal((await cli(['admin', 'member', 'remove', '--vault', 'shop', '--email', 'bo@example.com'])).code, 1, 'Bo is now the last owner')
  t.equal((await cli(['admin', 'member', 'remove', '--vault', 'shop', '--email', 'ana@example.com'])).code, 0)
  t.equal((await cli(['admin', 'member', 'remove', '--vault', 'shop', '--email', 'ana@example.com'])).code, 1, 'not a member any more')

  const log = await look((s) => s.listAccessLog(vaultId, { limit: 50 }))
  t.ok(log.length >= 4)
  t.ok(
    log.every((e) => e.personId === null && e.clientId === 'envkeep-server'),
    'every change by the server administrator, none under a member',
  )
  const members = await look(async (s) => (await s.listMembers(vaultId)).map((m) => m.personId))
  const bo = members[0]
  t.same(
    log
      .filter((e) => e.action.startsWith('member_'))
      .map((e) => [e.action, e.subject === bo ? 'bo' : 'ana', e.detail])
      .reverse(),
    [
      ['member_added', 'bo', 'owner'],
      ['member_changed', 'ana', 'viewer'],
      ['member_removed', 'ana', null],
    ],
    'whom and which role',
  )
})

t.test("admin var set past the plan's storage limit: exit 1 with the plan-limit sentence, nothing stored", async (t) => {
  const { cli, vaultId, look } = await setUp(t, { ENVKEEP_PLANS: JSON.stringify({ 'self-hosted': { maxVariables: 1, maxBytes: 1_000_000 } }) })
  t.equal((await cli(['admin', 'var', 'set', '--vault', 'shop', '--env', 'development', 'A'], 'a-value')).code, 0)
  const over = await cli(['admin', 'var', 'set', '--vault', 'shop', '--env', 'development', 'B', '--json'], 'b-value')
  t.equal(over.code, 1)
  t.match(over.stderr, new RegExp(`vault ${vaultId.slice(0, 8)} is at its storage limit of 1 variables on plan self-hosted; with this change it would use 2`))
  t.equal((JSON.parse(over.stdout.trim()) as { ok: boolean }).ok, false)
  t.equal((await cli(['admin', 'var', 'set', '--vault', 'shop', '--env', 'development', 'A'], 'a-new-value')).code, 0, 'changing a value adds none')
  t.same(
    await look(async (s) => (await variableMetas(s, vaultId, 'development')).map((v) => [v.name, v.updatedBy])),
    [['A', null]],
    'B not stored; A written by nobody',
  )
})

t.test('admin var set with bytes that are not UTF-8 on stdin: exit 1, nothing stored (issue 25)', async (t) => {
  const { cli, vaultId, look } = await setUp(t)
  for (const [name, bytes] of [
    ['0xFF', [0xff]],
    ['a CESU-8 surrogate', [0xed, 0xa0, 0x80]],
    ['a truncated sequence', [0xe2, 0x82]],
  ] as const) {
    const r = await cli(['admin', 'var', 'set', '--vault', 'shop', '--env', 'development', 'A'], Buffer.concat([Buffer.from('canary-'), Buffer.from(bytes)]))
    t.equal(r.code, 1, name)
    t.match(r.stderr, /stdin is not UTF-8 text; nothing was stored/)
    t.notMatch(r.stderr, 'canary')
  }
  t.same(await look((s) => variableMetas(s, vaultId, 'development')), [], 'nothing stored')
  t.equal((await cli(['admin', 'var', 'set', '--vault', 'shop', '--env', 'development', 'A'], Buffer.from('canary-€\n'))).code, 0, 'UTF-8 is stored')
})

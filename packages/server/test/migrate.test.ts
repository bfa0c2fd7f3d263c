import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { sql } from 'kysely'
import { mintSignIn } from '@envkeep/env-api-plugin/testing'
import { createPostgresStorage } from '@envkeep/storage-postgres'
import { createSqliteStorage } from '@envkeep/storage-sqlite'
import { freePort, spawnNode, untilSeen, withTestDatabase } from '@envkeep/test-support'
import { createHash, randomUUID } from 'node:crypto'
import { createPostgresAccountStore } from '../src/accounts/postgres-account-store.js'
import { createSqliteAccountStore } from '../src/accounts/sqlite-account-store.js'
import { verifyPassword } from '../src/secrets.js'
import { runCli, tempDir } from './helpers.js'

// Issue 10 item 6: moving a team from SQLite to PostgreSQL with every value and sign-in intact.

const BIN = fileURLToPath(new URL('../dist/bin.js', import.meta.url))
const PASSWORD = 'canary-migrate-password'
const VALUE = 'line one\nline "two" ünïcødé 🔑 canary-migrate'
const FIRST = 'canary-migrate-first-version'
/** Tables migrate may leave behind: migration bookkeeping (the target's own migrations made its schema) and counters that restart. */
const NOT_COPIED = /^(sqlite_.*|.*migration.*|rate_counters|envkeep_changes|staged_usage)$/ // counters each database restarts (rate limits; the change counter, issue 20) or makes again (the staged usage)

t.test('migrate --to copies everything, sealed as it is; the server on PostgreSQL reads it with the same key and sign-in', async (t) => {
  const url = await withTestDatabase(t)
  if (!url) return
  const dir = tempDir(t)
  const data = join(dir, 'data')
  const sqliteEnv = { ENVKEEP_DATA_DIR: data }
  const cli = (argv: string[], input = '', env: Record<string, string> = sqliteEnv) => runCli(argv, env, input, dir)

  // a team on SQLite: an account, a vault, a value, a CI identity, a CLI sign-in, a pending push
  t.equal((await cli(['init'])).code, 0)
  t.equal((await cli(['admin', 'user', 'create', '--email', 'ana@example.com', '--name', 'Ana', '--password-stdin'], PASSWORD)).code, 0)
  const vault = await cli(['admin', 'vault', 'create', '--name', 'shop', '--owner', 'ana@example.com', '--json'])
  const vaultId = (JSON.parse(vault.stdout.trim().split('\n').pop()!) as { vault: { id: string } }).vault.id
  // history: a first version, then the value read later
  t.equal((await cli(['admin', 'var', 'set', '--vault', 'shop', '--env', 'production', 'DB'], FIRST)).code, 0)
  t.equal((await cli(['admin', 'var', 'set', '--vault', 'shop', '--env', 'production', 'DB'], VALUE)).code, 0)
  // a server audit line: a deleted vault
  const old = await cli(['admin', 'vault', 'create', '--name', 'old-shop', '--owner', 'ana@example.com', '--json'])
  const oldId = (JSON.parse(old.stdout.trim().split('\n').pop()!) as { vault: { id: string } }).vault.id
  t.equal(
    (
      await cli([
        'admin',
        'ci',
        'add',
        '--vault',
        'shop',
        '--name',
        'deploy',
        '--issuer',
        'github',
        '--audience',
        'https://keep.example',
        '--subject',
        'repo:acme/shop:*',
        '--role',
        'editor',
      ])
    ).code,
    0,
  )
  const base = `http://127.0.0.1:${await freePort()}`
  const sqlite = await createSqliteStorage({ filename: join(data, 'envkeep.db') })
  const ana = ((await sqlite.database.sqlite.prepare('select id from accounts').get()) as { id: string }).id
  const signIn = await mintSignIn(sqlite, { baseUrl: base, personId: ana })
  t.ok((await sqlite.deleteVault({ vaultId: oldId, by: ana, at: new Date() })).ok)
  // a webhook and a pending invitation
  const hookId = randomUUID()
  const hook = { id: hookId, vaultId, url: 'https://hooks.example/migrate', format: 'slack' as const, events: ['push.created' as const] }
  await sqlite.changeWebhook({ kind: 'create', webhook: { ...hook, sealedSecret: null, createdAt: new Date(), createdBy: ana }, most: 10 })
  const accounts = await createSqliteAccountStore(sqlite.database)
  const invited = await accounts.createInvitation({
    id: randomUUID(),
    vaultId,
    email: 'bo@example.com',
    role: 'viewer',
    invitedBy: ana,
    createdAt: new Date(),
    expiresAt: new Date(Date.now() + 86_400_000),
    provesEmail: false,
    tokenHash: createHash('sha256').update('canary-migrate-invitation').digest('hex'),
  })
  const sourceTables = (sqlite.database.sqlite.prepare(`select name from sqlite_master where type = 'table' order by name`).all() as { name: string }[])
    .map((r) => r.name)
    .filter((n) => !NOT_COPIED.test(n))
  await sqlite.close()

  // a failure half-way leaves the target empty, and the command can be run again
  const broken = await createPostgresStorage({ connectionString: url, pool: 1 })
  await sql`create function test_break() returns trigger language plpgsql as $$ begin raise exception 'test: broken'; end $$`.execute(broken.database.db)
  await sql`create trigger test_break before insert on ci_identities for each row execute function test_break()`.execute(broken.database.db)
  const failed = await cli(['migrate', '--to', url])
  t.equal(failed.code, 1, 'the copy failed')
  t.equal(Number(((await sql`select count(*) as n from vaults`.execute(broken.database.db)).rows[0] as { n: string }).n), 0, 'and left nothing behind')
  await sql`drop trigger test_break on ci_identities`.execute(broken.database.db)
  await broken.close()

  const moved = await cli(['migrate', '--to', url, '--json'])
  t.equal(moved.code, 0, moved.stderr)
  const result = JSON.parse(moved.stdout.trim().split('\n').pop()!) as { tables: Record<string, number>; dropped: string[] }
  const tables = result.tables
  t.same(
    [...result.dropped].sort(),
    ['access_tokens.created_at', 'refresh_tokens.created_at'],
    'only the times SQLite keeps and PostgreSQL has no column for are left out',
  )
  t.match(tables, { vaults: 1, members: 1, environments: 3, variables: 1, ci_identities: 1, accounts: 1, sign_ins: 1, access_tokens: 1, refresh_tokens: 1 })
  t.ok(tables.access_log! >= 3, 'the access log came along')
  t.match(tables, { change_sets: 2, webhooks: 1, invitations: 1, audit_log: 1 }, 'history, webhooks, invitations and the server audit came along')
  t.same(
    sourceTables.filter((n) => !(n in tables)),
    [],
    'every table of a migrated SQLite database is copied (a new table needs no change to migrate)',
  )
  t.notOk(moved.stdout.includes('canary') || moved.stderr.includes('canary'), 'no value or password printed')

  const again = await cli(['migrate', '--to', url])
  t.equal(again.code, 1)
  t.match(again.stderr, /already holds envkeep data \(1 vaults, 1 accounts, 1 sign ins, 1 oauth codes\); migrate copies into an empty database only/)

  // the server on PostgreSQL, with the same data directory (its master key): the same sign-in reads the same value
  const port = Number(new URL(base).port)
  const server = spawnNode(BIN, ['start', '--port', String(port)], { env: { ...sqliteEnv, ENVKEEP_DATABASE_URL: url, ENVKEEP_BASE_URL: base }, cwd: dir })
  t.teardown(() => {
    if (server.child.exitCode === null) server.child.kill('SIGKILL')
  })
  await server.waitFor('stdout', /envkeep-server started/)
  const read = await fetch(`${base}/api/env/${vaultId}/production`, { headers: { authorization: `Bearer ${signIn.accessToken}` } })
  t.equal(read.status, 200, 'the CLI sign-in survived the move')
  t.same(((await read.json()) as { variables: Record<string, string> }).variables, { DB: VALUE }, 'byte for byte')
  const pg = await createPostgresStorage({ connectionString: url, pool: 1 })
  const hash = (
    (await sql`select password_hash from accounts where lower(email) = 'ana@example.com'`.execute(pg.database.db)).rows[0] as { password_hash: string }
  ).password_hash
  t.ok(await verifyPassword(hash, PASSWORD), 'the password still signs in')
  const log = await pg.listAccessLog(vaultId, { limit: 100 })
  const next = await fetch(`${base}/api/env/${vaultId}/production`, { headers: { authorization: `Bearer ${signIn.accessToken}` } })
  await next.arrayBuffer()
  const after = await pg.listAccessLog(vaultId, { limit: 100 })
  t.ok(after[0]!.id > log[0]!.id, 'new log entries continue after the copied ids')
  t.same(
    (await pg.listWebhooks(vaultId)).map((w) => [w.id, w.url, w.format]),
    [[hookId, 'https://hooks.example/migrate', 'slack']],
    'the webhook came along',
  )
  const pgAccounts = await createPostgresAccountStore(pg.database)
  t.same(
    (await pgAccounts.listInvitations(vaultId, new Date())).map((i) => [i.id, i.email, i.role]),
    [[invited.id, 'bo@example.com', 'viewer']],
    'the pending invitation came along',
  )
  await pg.close()
  const pgEnv = { ...sqliteEnv, ENVKEEP_DATABASE_URL: url }
  const audit = await cli(['admin', 'audit', '--json'], '', pgEnv)
  t.equal(audit.code, 0, audit.stderr)
  t.match(JSON.parse(audit.stdout), { entries: [{ action: 'vault_deleted', vault: { id: oldId, name: 'old-shop' } }] }, 'the server audit came along')
  // the history opens with the key: back to the first version
  const history = await cli(['admin', 'history', '--vault', 'shop', '--env', 'production', '--json'], '', pgEnv)
  t.equal(history.code, 0, history.stderr)
  const changes = (JSON.parse(history.stdout) as { changes: { id: string }[] }).changes
  t.equal(changes.length, 2)
  const restored = await cli(['admin', 'restore', '--vault', 'shop', '--env', 'production', '--change', changes[1]!.id], '', pgEnv)
  t.equal(restored.code, 0, restored.stderr)
  // the running server hears the command's change through the database (issue 20: within a second)
  const first = await untilSeen(
    async () => {
      const r = await fetch(`${base}/api/env/${vaultId}/production`, { headers: { authorization: `Bearer ${signIn.accessToken}` } })
      return ((await r.json()) as { variables: Record<string, string> }).variables
    },
    (v) => v.DB === FIRST,
  )
  t.same(first, { DB: FIRST }, 'the first version, opened from the history')
  server.child.kill('SIGTERM')
  await server.done
})

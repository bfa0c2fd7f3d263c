import { chmodSync, copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { gunzipSync } from 'node:zlib'
import t from 'tap'
import { createVaultCrypto } from '@envkeep/env-api-plugin'
import { createSqliteStorage } from '@envkeep/storage-sqlite'
import { createSqliteAccountStore } from '../src/accounts/sqlite-account-store.js'
import { MIGRATION_TABLE } from '../src/accounts/migrations/sqlite.js'
import { createFileKeyring, readKeyFile } from '../src/keyring-file.js'
import { runCli, tempDir } from './helpers.js'

// test/fixtures/data-0.1.0 is a data directory made by envkeep-server 0.1.0
// (commit 2ba2b48: `init`, `admin user create ana@example.com`, `admin
// vault create shop`, `admin var set OLD_VAR`, and a web session of Ana's
// whose token hash is 'a' × 64), when the accounts tables were made by the
// storage package's migration 003. The server now migrates them itself,
// under its own migration table: the old data must keep working as it is.

const FIXTURE = join(import.meta.dirname, 'fixtures', 'data-0.1.0')
/** The master key that fixture's values were sealed under: made for this test data only, it guards nothing else. */
const FIXTURE_MASTER_KEY = 'i3GmXRBSc07fND4pV6z_t1VD49gBm-Y6hwXnvfhyhF4'

function oldDataDir(t: Parameters<typeof tempDir>[0]): string {
  const dir = join(tempDir(t), 'data')
  mkdirSync(dir, { mode: 0o700 })
  writeFileSync(join(dir, 'envkeep.db'), gunzipSync(readFileSync(join(FIXTURE, 'envkeep.db.gz'))), { mode: 0o600 })
  writeFileSync(join(dir, 'master.key'), `${FIXTURE_MASTER_KEY}\n`, { mode: 0o600 })
  return dir
}

t.test('a data directory made before the accounts moved keeps its accounts, sessions, vaults and values', async (t) => {
  const dir = oldDataDir(t)
  const env = { ENVKEEP_DATA_DIR: dir }
  const list = await runCli(['admin', 'var', 'list', '--vault', 'shop', '--env', 'development', '--json'], env, '', dir)
  t.equal(list.code, 0, list.stderr)
  t.same((JSON.parse(list.stdout.trim()) as { names: string[] }).names, ['OLD_VAR'])
  const set = await runCli(['admin', 'var', 'set', '--vault', 'shop', '--env', 'development', 'NEW_VAR'], env, 'new-value', dir)
  t.equal(set.code, 0, set.stderr)

  const storage = await createSqliteStorage({ filename: join(dir, 'envkeep.db') })
  t.teardown(() => storage.close())
  const accounts = await createSqliteAccountStore(storage.database)
  const ana = await accounts.findAccountByEmail('ANA@example.com')
  t.equal(ana?.name, 'Ana', 'the account is there, still found case-insensitively')
  t.match(ana?.passwordHash, /^\$argon2id\$/)
  const session = await accounts.findSession('a'.repeat(64), new Date('2026-12-01T00:00:00.000Z'))
  t.equal(session?.account.id, ana?.id, 'her web session still signs her in')
  t.equal(await accounts.countAccounts(), 1)

  const applied = storage.database.sqlite.prepare(`select name from ${MIGRATION_TABLE}`).all() as { name: string }[]
  t.same(
    applied.map((r) => r.name),
    ['001_accounts', '002_invitations', '003_email_proof', '004_factors', '005_sso', '006_webauthn_challenges'],
    "the server's own migrations ran: adopted the tables, then added invitations and email proof",
  )
  const tables = storage.database.sqlite.prepare("select count(*) as n from sqlite_master where type = 'table' and name = 'accounts'").get() as { n: number }
  t.equal(tables.n, 1)

  const [vault] = await storage.findVaults({ name: 'shop' })
  t.ok(vault)
  const keyFile = join(dir, 'master.key')
  const crypto = createVaultCrypto(storage, createFileKeyring(keyFile, readKeyFile(keyFile)!.key))
  const sealed = await storage.readCurrent(vault!.id, 'development')
  t.same(await crypto.openValues(vault!.id, 'development', sealed.variables), { NEW_VAR: 'new-value', OLD_VAR: 'old-value' }, 'old and new values open')
})

t.test('a new data directory gets the accounts tables from the server', async (t) => {
  const dir = join(tempDir(t), 'data')
  const env = { ENVKEEP_DATA_DIR: dir }
  t.equal((await runCli(['init'], env, '', dir)).code, 0)
  const storage = await createSqliteStorage({ filename: join(dir, 'envkeep.db') })
  t.teardown(() => storage.close())
  const storageMigrations = (storage.database.sqlite.prepare('select name from kysely_migration order by name').all() as { name: string }[]).map((r) => r.name)
  t.ok(storageMigrations.includes('003_accounts'), 'the storage package keeps its (now empty) step')
  const tables = storage.database.sqlite
    .prepare("select name from sqlite_master where type = 'table' and name in ('accounts', 'web_sessions', 'setup_tokens') order by name")
    .all()
  t.same(tables, [{ name: 'accounts' }, { name: 'setup_tokens' }, { name: 'web_sessions' }], 'made by init, through the server')
  const accounts = await createSqliteAccountStore(storage.database)
  await accounts.createAccount({ id: 'a1', email: 'ana@example.com', name: 'Ana', passwordHash: 'x' }, new Date())
  await t.rejects(accounts.createAccount({ id: 'a2', email: 'ANA@example.com', name: 'Ana', passwordHash: 'x' }, new Date()), {
    name: 'StorageError',
    sqlstate: '23505',
  })
})

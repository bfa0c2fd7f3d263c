import t, { type Test } from 'tap'
import { randomUUID } from 'node:crypto'
import { createSqliteStorage } from '@envkeep/storage-sqlite'
import { createSqliteAccountStore } from '../src/accounts/sqlite-account-store.js'
import { createPostgresAccountStore } from '../src/accounts/postgres-account-store.js'
import type { AccountStore } from '../src/accounts/account-store.js'
import { createPostgresStorage } from '@envkeep/storage-postgres'
import { withTestDatabase } from '@envkeep/test-support'
import { join } from 'node:path'
import { tempDir } from './helpers.js'

type Backend = 'sqlite' | 'postgres'

/** The account store on SQLite (a file when given, for the race), or on a fresh PostgreSQL database. */
async function open(t: Test, backend: Backend, filename = ':memory:'): Promise<{ accounts: AccountStore } | null> {
  if (backend === 'postgres') {
    const url = await withTestDatabase(t)
    if (!url) return null
    const storage = await createPostgresStorage({ connectionString: url, pool: 3 })
    t.teardown(() => storage.close())
    return { accounts: await createPostgresAccountStore(storage.database) }
  }
  const storage = await createSqliteStorage({ filename })
  t.teardown(() => storage.close())
  return { accounts: await createSqliteAccountStore(storage.database) }
}

const NOW = new Date('2026-11-21T12:00:00.000Z')
const later = (ms: number) => new Date(NOW.getTime() + ms)
const account = (email: string) => ({ id: randomUUID(), email, name: 'N', passwordHash: '$argon2id$x' })

for (const backend of ['sqlite', 'postgres'] as const) {
  t.test(`${backend}: emails are unique case-insensitively and found in any case`, async (t) => {
    const opened = await open(t, backend)
    if (!opened) return
    const { accounts } = opened
    const a = await accounts.createAccount(account('Ana@Example.com'), NOW)
    await t.rejects(accounts.createAccount(account('ana@example.COM'), NOW), { name: 'StorageError', sqlstate: '23505' })
    t.equal((await accounts.findAccountByEmail('ANA@EXAMPLE.COM'))?.id, a.id)
    t.equal(await accounts.findAccountByEmail('bo@example.com'), null)
    t.equal(await accounts.getAccount(randomUUID()), null)
    t.equal(await accounts.countAccounts(), 1)
    t.equal(await accounts.setPasswordHash(a.id, '$argon2id$y'), true)
    t.equal((await accounts.getAccount(a.id))?.passwordHash, '$argon2id$y')
    t.equal(await accounts.setPasswordHash(randomUUID(), 'h'), false)
  })

  t.test(`${backend}: the setup token works once, only while live, only the newest, only with no account`, async (t) => {
    const opened = await open(t, backend)
    if (!opened) return
    const { accounts } = opened
    await accounts.replaceSetupToken('old', NOW, later(60_000))
    await accounts.replaceSetupToken('new', NOW, later(60_000))
    t.equal(await accounts.isSetupTokenLive('old', NOW), false, 'replaced')
    t.equal(await accounts.isSetupTokenLive('new', NOW), true)
    t.equal(await accounts.isSetupTokenLive('new', later(60_000)), false, 'ends at expiresAt')
    t.equal(await accounts.createFirstAccount('new', account('a@example.com'), later(60_000)), null, 'expired: refused')
    await accounts.replaceSetupToken('again', NOW, later(60_000))
    t.ok(await accounts.createFirstAccount('again', account('a@example.com'), NOW))
    t.equal(await accounts.createFirstAccount('again', account('b@example.com'), NOW), null, 'used: refused')
    await accounts.replaceSetupToken('late', NOW, later(60_000))
    t.equal(await accounts.createFirstAccount('late', account('c@example.com'), NOW), null, 'an account exists: refused')
    t.equal(await accounts.countAccounts(), 1)
  })

  t.test(`${backend}: two racing setups with one link: exactly one account`, async (t) => {
    // one connection per process, as the server has (SQLite: a file; PostgreSQL: a pool)
    const one = await open(t, backend, join(tempDir(t), 'race.db'))
    if (!one) return
    await one.accounts.replaceSetupToken('tok', NOW, later(60_000))
    const results = await Promise.all([
      one.accounts.createFirstAccount('tok', account('a@example.com'), NOW),
      one.accounts.createFirstAccount('tok', account('b@example.com'), NOW),
    ])
    t.equal(results.filter((r) => r !== null).length, 1)
    t.equal(await one.accounts.countAccounts(), 1)
  })

  t.test(`${backend}: sessions: live until their end, deleted one by one, per account, or when expired`, async (t) => {
    const opened = await open(t, backend)
    if (!opened) return
    const { accounts } = opened
    const a = await accounts.createAccount(account('a@example.com'), NOW)
    await accounts.createSession('s1', a.id, NOW, later(1000))
    await accounts.createSession('s2', a.id, NOW, later(5000))
    t.equal((await accounts.findSession('s1', NOW))?.account.email, 'a@example.com')
    t.equal(await accounts.findSession('s1', later(1000)), null, 'ended')
    t.equal(await accounts.deleteExpired(later(2000)), 1)
    t.equal(await accounts.deleteSession('s1'), false, 'already swept')
    t.equal(await accounts.deleteSessionsOf(a.id), 1)
    t.equal(await accounts.findSession('s2', NOW), null)
    await t.rejects(accounts.createSession('s3', randomUUID(), NOW, later(1000)), { name: 'StorageError', sqlstate: '23503' })
  })
}

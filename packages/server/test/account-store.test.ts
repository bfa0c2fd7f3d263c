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

  t.test(`${backend}: invitations: newest per email and vault, live until their end, revoked per vault, swept`, async (t) => {
    const opened = await open(t, backend)
    if (!opened) return
    const { accounts } = opened
    const owner = await accounts.createAccount(account('o@example.com'), NOW)
    const [v1, v2] = [randomUUID(), randomUUID()]
    const inv = (id: string, tokenHash: string, vaultId: string, email: string, ttl = 60_000, provesEmail = false) =>
      accounts.createInvitation({ id, tokenHash, vaultId, email, role: 'editor', invitedBy: owner.id, createdAt: NOW, expiresAt: later(ttl), provesEmail })
    await inv('i1', 'h1', v1, 'Nina@example.com')
    await inv('i2', 'h2', v1, 'nina@EXAMPLE.com') // replaces i1: only the newest link works
    await inv('i3', 'h3', v2, 'nina@example.com')
    await inv('i4', 'h4', v1, 'short@example.com', 1000)
    t.equal(await accounts.findInvitation('h1', NOW), null, 'replaced')
    t.same(await accounts.findInvitation('h2', NOW), {
      id: 'i2',
      vaultId: v1,
      email: 'nina@EXAMPLE.com',
      role: 'editor',
      invitedBy: owner.id,
      createdAt: NOW,
      expiresAt: later(60_000),
      provesEmail: false,
    })
    t.same(
      (await accounts.listInvitations(v1, NOW)).map((i) => i.id),
      ['i2', 'i4'],
    )
    // issue 25: the notice at sign-in, and taking one up as the account with that email
    t.same(
      (await accounts.listInvitationsForEmail('NINA@example.com', NOW)).map((i) => i.id),
      ['i2', 'i3'],
    )
    const nina = await accounts.createAccount({ ...account('nina@example.com'), emailConfirmed: false }, NOW)
    t.equal(nina.emailConfirmed, false)
    const [v3, v4] = [randomUUID(), randomUUID()]
    await inv('i6', 'h6', v3, 'nina@example.com')
    t.equal(await accounts.takeInvitationFor(owner.id, { id: 'i6' }, NOW), null, 'not for another email')
    t.equal(await accounts.takeInvitationFor(nina.id, { id: 'i6' }, later(60_000)), null, 'not once expired')
    t.equal((await accounts.takeInvitationFor(nina.id, { id: 'i6' }, NOW))?.id, 'i6')
    t.equal(await accounts.takeInvitationFor(nina.id, { id: 'i6' }, NOW), null, 'once')
    t.equal((await accounts.getAccount(nina.id))?.emailConfirmed, false, 'a link shown to an inviter proves nothing')
    await inv('i7', 'h7', v4, 'nina@example.com', 60_000, true)
    t.equal((await accounts.takeInvitationFor(nina.id, { tokenHash: 'h7' }, NOW))?.provesEmail, true)
    t.equal((await accounts.getAccount(nina.id))?.emailConfirmed, true, 'a mailed link proves the address')
    t.same(
      (await accounts.listInvitations(v1, later(1000))).map((i) => i.id),
      ['i2'],
      'an expired one is not listed',
    )
    t.equal(await accounts.findInvitation('h4', later(1000)), null, 'nor found')
    t.equal(await accounts.revokeInvitation(v2, 'i2'), false, 'revoked only through its own vault')
    t.equal(await accounts.revokeInvitation(v1, 'i2'), true)
    t.equal(await accounts.findInvitation('h2', NOW), null)
    await accounts.deleteExpired(later(2000))
    t.same(
      (await accounts.listInvitations(v1, NOW)).map((i) => i.id),
      [],
      'swept',
    )
    t.ok(await accounts.findInvitation('h3', NOW), 'the other vault keeps its own')
  })

  t.test(`${backend}: accepting an invitation: once, live only, the account gets its email; a taken email changes nothing`, async (t) => {
    const one = await open(t, backend, join(tempDir(t), 'invite.db'))
    if (!one) return
    const { accounts } = one
    const owner = await accounts.createAccount(account('o@example.com'), NOW)
    const vaultId = randomUUID()
    const inv = (id: string, tokenHash: string, email: string) =>
      accounts.createInvitation({
        id,
        tokenHash,
        vaultId,
        email,
        role: 'viewer',
        invitedBy: owner.id,
        createdAt: NOW,
        expiresAt: later(60_000),
        provesEmail: false,
      })
    await inv('i1', 'h1', 'Nina@example.com')
    const newcomer = () => ({ id: randomUUID(), name: 'Nina', passwordHash: '$argon2id$n' })
    t.same(await accounts.acceptInvitation('h1', newcomer(), later(60_000)), { ok: false, reason: 'not_live' }, 'expired')
    await inv('i1b', 'h1b', 'Nina@example.com')
    // two racing acceptances of one link: exactly one account
    const results = await Promise.all([accounts.acceptInvitation('h1b', newcomer(), NOW), accounts.acceptInvitation('h1b', newcomer(), NOW)])
    t.equal(results.filter((r) => r.ok).length, 1)
    t.same(
      results.filter((r) => !r.ok),
      [{ ok: false, reason: 'not_live' }],
    )
    const ok = results.find((r) => r.ok)
    t.equal(ok?.ok && ok.account.email, 'Nina@example.com')
    t.equal(ok?.ok && ok.invitation.role, 'viewer')
    t.equal((await accounts.findAccountByEmail('nina@example.com'))?.name, 'Nina')
    t.same(await accounts.acceptInvitation('h1b', newcomer(), NOW), { ok: false, reason: 'not_live' }, 'used')
    // an email that has an account: refused, and the invitation is left as it was
    await inv('i2', 'h2', 'NINA@example.com')
    t.same(await accounts.acceptInvitation('h2', newcomer(), NOW), { ok: false, reason: 'email_taken' })
    t.ok(await accounts.findInvitation('h2', NOW), 'not consumed')
    t.equal(await accounts.countAccounts(), 2)
  })
}

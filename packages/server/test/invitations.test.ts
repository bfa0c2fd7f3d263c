import { randomUUID } from 'node:crypto'
import t, { type Test } from 'tap'
import { sql, type Kysely } from 'kysely'
import { testLogEntry } from '@envkeep/env-api-plugin/testing'
import { SESSION_COOKIE } from '../src/people-local.js'
import { hashToken } from '../src/secrets.js'
import { INVITATION_TTL_MS } from '../src/invitations.js'
import { addAccount, browser, buildTestApp, csrfOf, freePort, type TestApp } from './helpers.js'
import { smtpSink } from './smtp-sink.js'

// Issue 14, item 1 on the self-hosting server: Invite on a vault's Members, the invitation
// page, one use, 7 days, revocable, owners only, by email. SQLite here; PostgreSQL in test:postgres.

const OWNER_PASSWORD = 'canary-owner-password-invite'
const NEW_PASSWORD = 'canary-newcomer-password-9'
const SMTP_PASSWORD = 'canary-smtp-password-x7'
const LINK_RE = /<code id="invitation-link" class="value">(http:\/\/[^<]+\/invite\/([A-Za-z0-9_-]{43}))<\/code>/

type Who = 'owner' | 'editor' | 'viewer'

async function setUp(t: Test, env?: Record<string, string>) {
  const built: TestApp = await buildTestApp(t, env ? { env } : {})
  const { accounts, storage, clock } = built
  const people = {
    owner: await addAccount(accounts, 'olga@example.com', OWNER_PASSWORD, 'Olga Owner'),
    editor: await addAccount(accounts, 'ed@example.com', OWNER_PASSWORD, 'Ed Editor'),
    viewer: await addAccount(accounts, 'vic@example.com', OWNER_PASSWORD, 'Vic Viewer'),
    other: await addAccount(accounts, 'oscar@example.com', OWNER_PASSWORD, 'Oscar Other'),
  }
  const vaultId = randomUUID()
  await storage.createVault(
    {
      id: vaultId,
      name: 'Acme',
      ownerId: people.owner.id,
      plan: 'self-hosted',
      environments: [{ name: 'development', ownersOnly: false }],
      now: new Date(clock.ms),
    },
    testLogEntry({ vaultId, action: 'vault_created' }),
  )
  for (const role of ['editor', 'viewer'] as const)
    await storage.changeMember(
      { kind: 'set', vaultId, personId: people[role].id, role },
      testLogEntry({ vaultId, action: 'member_added', subject: people[role].id }),
    )
  const url = `/v/${vaultId}`
  /** a browser signed in as one of them, on the vault page */
  async function signedIn(who: Who) {
    const b = browser(built.app)
    const login = await b.get('/login')
    const res = await b.post('/login', { _csrf: csrfOf(login.body), email: people[who].email, password: OWNER_PASSWORD, return_to: url })
    t.equal(res.statusCode, 303, `${who} signed in`)
    t.equal((await b.get(url)).statusCode, 200)
    // a viewer's vault page has no form: the vault list's token is as good (one per session)
    return { b, csrf: csrfOf((await b.get('/')).body) }
  }
  /** the owner invites `email`; returns the answer and the link's path and token */
  async function invite(email: string, role = 'editor') {
    const { b, csrf } = await signedIn('owner')
    const res = await b.post(`${url}/members/invite`, { _csrf: csrf, email, role })
    const m = LINK_RE.exec(res.body)
    return { res, owner: b, link: m?.[1] ?? '', token: m?.[2] ?? '', path: m ? new URL(m[1]!).pathname : '' }
  }
  /** the invitee opens the link and chooses name and password */
  async function accept(path: string, fields: Record<string, string> = {}) {
    const b = browser(built.app)
    const page = await b.get(path)
    const res = await b.post(path, {
      _csrf: page.statusCode === 200 ? csrfOf(page.body) : '',
      name: 'Nina Newcomer',
      password: NEW_PASSWORD,
      password2: NEW_PASSWORD,
      ...fields,
    })
    return { b, page, res }
  }
  return { ...built, people, vaultId, url, signedIn, invite, accept }
}

/** Every row of the invitations table, straight from the database (not through the store). */
async function invitationRows(storage: TestApp['storage']): Promise<Record<string, unknown>[]> {
  const db = (storage as unknown as { database: { db: Kysely<unknown> } }).database.db
  return (await sql`select * from invitations`.execute(db)).rows as Record<string, unknown>[]
}

t.test('an owner invites someone with an account: an invitation they accept, not a membership at once (issue 25)', async (t) => {
  const s = await setUp(t)
  const { res, path } = await s.invite('OSCAR@example.com', 'viewer')
  t.equal(res.statusCode, 200, 'the same answer as for an email without an account')
  t.match(res.body, 'Invitation link')
  t.notOk(
    (await s.storage.listMembers(s.vaultId)).some((m) => m.personId === s.people.other.id),
    'not added at once',
  )
  t.equal((await invitationRows(s.storage)).length, 1)
  // the link, signed out: sign in as that account to join; there is no form to make another account
  const page = await browser(s.app).get(path)
  t.equal(page.statusCode, 200)
  t.match(page.body, 'sign in as that account to join')
  t.notMatch(page.body, 'name="password"')
  // Oscar's next sign-in tells him, and he joins from there
  const b = browser(s.app)
  const login = await b.get('/login')
  const signedIn = await b.post('/login', { _csrf: csrfOf(login.body), email: 'oscar@example.com', password: OWNER_PASSWORD, return_to: '/' })
  t.equal(signedIn.headers.location, '/invitations?return_to=%2F', 'the notice comes first')
  const notice = await b.get(signedIn.headers.location!)
  t.equal(notice.statusCode, 200)
  t.match(notice.body, '<strong>Acme</strong> as <span class="role role-viewer">viewer</span>, from Olga Owner')
  const id = /name="invitation" value="([^"]+)"/.exec(notice.body)?.[1]
  const joined = await b.post('/invitations/join', { _csrf: csrfOf(notice.body), invitation: id ?? '' })
  t.equal(joined.statusCode, 303)
  t.equal(joined.headers.location, s.url)
  const roles = Object.fromEntries((await s.storage.listMembers(s.vaultId)).map((m) => [m.personId, m.role]))
  t.equal(roles[s.people.other.id], 'viewer')
  const [entry] = await s.storage.listAccessLog(s.vaultId, { action: 'member_added', limit: 1 })
  t.equal(entry?.personId, s.people.owner.id, 'added as the inviter')
  t.same(await invitationRows(s.storage), [], 'used up')
  t.equal((await browser(s.app).get(path)).statusCode, 404, 'the link is used up too')
})

t.test('a new email: link shown once → page → account and membership with the role → signed in on the vault', async (t) => {
  const s = await setUp(t)
  const { res, owner, token, path, link } = await s.invite('Nina@Example.com', 'editor')
  t.equal(res.statusCode, 200)
  t.match(res.body, 'Invitation link')
  t.match(res.body, 'Send it to them yourself.', 'no SMTP: not emailed')
  t.equal(link, `${s.config.baseUrl}/invite/${token}`)
  // only the hash is stored
  const rows = await invitationRows(s.storage)
  t.equal(rows.length, 1)
  t.equal(rows[0]!.token_hash, hashToken(token))
  t.notOk(JSON.stringify(rows).includes(token), 'the token itself is not stored')
  // listed, without the link
  const members = await owner.get(`${s.url}/members`)
  t.notMatch(members.body, token)
  const pending = members.body.slice(members.body.indexOf('Pending invitations'))
  t.match(pending, 'Nina@Example.com')
  t.match(pending, 'role-editor')
  t.match(pending, 'Olga Owner')
  t.match(pending, `<time datetime="${new Date(s.clock.ms + INVITATION_TTL_MS).toISOString()}">`)

  const { b, page, res: accepted } = await s.accept(path)
  t.equal(page.statusCode, 200)
  t.match(page.body, '<h1>Join Acme</h1>')
  t.match(page.body, 'Olga Owner invited you')
  t.match(page.body, 'value="Nina@Example.com" readonly')
  t.match(page.headers['content-security-policy'], /script-src 'self'/)
  for (const label of ['Name', 'Password', 'Password again']) t.match(page.body, `">${label}</label>`)
  t.equal(accepted.statusCode, 303)
  t.equal(accepted.headers.location, s.url, 'lands on the vault')
  t.ok(b.jar[SESSION_COOKIE], 'signed in')
  const vault = await b.get(s.url)
  t.equal(vault.statusCode, 200)
  t.match(vault.body, 'Your role: <span class="role role-editor">editor</span>')
  const account = await s.accounts.findAccountByEmail('nina@example.com')
  t.equal(account?.name, 'Nina Newcomer')
  t.match(account?.passwordHash, /^\$argon2id\$/)
  const member = (await s.storage.listMembers(s.vaultId)).find((m) => m.personId === account?.id)
  t.equal(member?.role, 'editor')
  // the access log: added by the inviter, whom and with which role
  const [entry] = await s.storage.listAccessLog(s.vaultId, { action: 'member_added', limit: 1 })
  t.equal(entry?.personId, s.people.owner.id)
  t.equal(entry?.subject, account?.id)
  t.equal(entry?.detail, 'editor')
  t.same(await invitationRows(s.storage), [], 'used up')
  t.notOk(s.log.text.includes(token), 'the token never reaches the log')
  t.notOk(s.log.text.includes(NEW_PASSWORD), 'nor the password')
  t.match(s.log.text, '/invite/[redacted]', 'the request was logged with its token replaced')
})

t.test('one use: the second visit and a replayed form are refused, with the same page', async (t) => {
  const s = await setUp(t)
  const { path } = await s.invite('nina@example.com')
  const first = await s.accept(path)
  t.equal(first.res.statusCode, 303)
  const again = await s.accept(path, { name: 'Someone Else' })
  t.equal(again.page.statusCode, 404)
  t.match(again.page.body, 'This invitation link cannot be used')
  t.equal(again.res.statusCode, 403, 'no form, no CSRF token')
  // a browser that loaded the form before the first use
  const s2 = await setUp(t)
  const { path: p2 } = await s2.invite('nina@example.com')
  const early = browser(s2.app)
  const form = await early.get(p2)
  t.equal((await s2.accept(p2)).res.statusCode, 303)
  const late = await early.post(p2, { _csrf: csrfOf(form.body), name: 'Late', password: NEW_PASSWORD, password2: NEW_PASSWORD })
  t.equal(late.statusCode, 404)
  t.match(late.body, 'This invitation link cannot be used')
  t.equal((await s2.accounts.listAccounts()).filter((a) => a.email.toLowerCase() === 'nina@example.com').length, 1)
})

t.test('expiry after 7 days (injected clock), revoke, and unknown links look the same', async (t) => {
  const s = await setUp(t)
  const a = await s.invite('alpha@example.net')
  const b = await s.invite('beta@example.net')
  s.clock.ms += INVITATION_TTL_MS - 60_000
  t.equal((await browser(s.app).get(a.path)).statusCode, 200, 'a minute before expiry')
  s.clock.ms += 60_000
  const expired = await browser(s.app).get(a.path)
  t.equal(expired.statusCode, 404, 'expired')
  t.equal((await s.accept(a.path)).res.statusCode, 403, 'no form to send')
  const listed = await (await s.signedIn('owner')).b.get(`${s.url}/members`)
  t.notMatch(listed.body, 'alpha@example.net', 'an expired invitation is no longer listed')
  s.clock.ms -= INVITATION_TTL_MS // b is live again for this check

  const { b: owner, csrf } = await s.signedIn('owner')
  const page = await owner.get(`${s.url}/members`)
  const id = /name="invitation" value="([^"]+)"/.exec(page.body.slice(page.body.indexOf('beta@example.net')))?.[1]
  t.ok(id)
  const revoke = await owner.post(`${s.url}/members/invitations/revoke`, { _csrf: csrf, invitation: id! })
  t.equal(revoke.statusCode, 303)
  t.equal(revoke.headers.location, `${s.url}/members?done=invitation_revoked`)
  t.match((await owner.get(`${s.url}/members?done=invitation_revoked`)).body, 'The invitation was revoked.')
  const revoked = await browser(s.app).get(b.path)
  t.equal(revoked.statusCode, 404)
  const unknown = await browser(s.app).get(`/invite/${'A'.repeat(43)}`)
  const malformed = await browser(s.app).get('/invite/nonsense')
  for (const r of [revoked, unknown, malformed]) t.equal(r.body, expired.body, 'one page for expired, revoked and unknown')
  t.equal((await s.accounts.listAccounts()).length, 4, 'no account was created')
})

t.test('owners only: editors and viewers cannot invite, see or revoke invitations', async (t) => {
  const s = await setUp(t)
  const { path } = await s.invite('nina@example.com')
  const id = String((await invitationRows(s.storage))[0]!.id)
  for (const who of ['editor', 'viewer'] as const) {
    const { b, csrf } = await s.signedIn(who)
    const page = await b.get(s.url)
    t.notMatch(page.body, 'nina@example.com', `${who} does not see the invitation`)
    t.notMatch(page.body, '>Invite<', `${who} has no Invite form`)
    const invite = await b.post(`${s.url}/members/invite`, { _csrf: csrf, email: 'x@example.com', role: 'owner' })
    t.equal(invite.statusCode, 403, `${who}: invite refused`)
    t.notMatch(invite.body, 'Invitation link')
    t.equal((await b.post(`${s.url}/members/invitations/revoke`, { _csrf: csrf, invitation: id })).statusCode, 403, `${who}: revoke refused`)
  }
  t.equal((await invitationRows(s.storage)).length, 1, 'nothing created or revoked')
  t.equal((await browser(s.app).get(path)).statusCode, 200)
})

t.test('the form: passwords asked twice and the setup rules; an inviter who is no longer owner; an email that got an account', async (t) => {
  const s = await setUp(t)
  const { path } = await s.invite('nina@example.com', 'viewer')
  const short = await s.accept(path, { password: 'short', password2: 'short' })
  t.equal(short.res.statusCode, 400)
  t.match(short.res.body, 'at least 10 characters')
  const differ = await s.accept(path, { password2: `${NEW_PASSWORD}-not` })
  t.equal(differ.res.statusCode, 400)
  t.match(differ.res.body, 'the two passwords are not the same')
  t.notMatch(differ.res.body, NEW_PASSWORD, 'a password is never echoed')
  t.match(differ.res.body, 'value="Nina Newcomer"', 'the name is kept')
  const noName = await s.accept(path, { name: ' ' })
  t.equal(noName.res.statusCode, 400)
  const noCsrf = await browser(s.app).post(path, { name: 'N', password: NEW_PASSWORD, password2: NEW_PASSWORD })
  t.equal(noCsrf.statusCode, 403)
  t.equal(await s.accounts.findAccountByEmail('nina@example.com'), null, 'no account yet')

  // an account with that email appears meanwhile (e.g. `admin user create`): sign in to join
  const early = browser(s.app)
  const form = await early.get(path)
  await addAccount(s.accounts, 'NINA@example.com', OWNER_PASSWORD, 'Nina')
  const taken = await browser(s.app).get(path)
  t.equal(taken.statusCode, 200)
  t.match(taken.body, 'sign in as that account to join')
  t.notMatch(taken.body, 'name="password"')
  const late = await early.post(path, { _csrf: csrfOf(form.body), name: 'Late', password: NEW_PASSWORD, password2: NEW_PASSWORD })
  t.equal(late.statusCode, 409)
  t.match(late.body, 'You already have an account')

  // the inviter steps down: their invitation stops working
  const t2 = await setUp(t)
  const { path: p2 } = await t2.invite('nina@example.com')
  await t2.storage.changeMember(
    { kind: 'set', vaultId: t2.vaultId, personId: t2.people.editor.id, role: 'owner' },
    testLogEntry({ vaultId: t2.vaultId, action: 'member_changed' }),
  )
  await t2.storage.changeMember(
    { kind: 'set', vaultId: t2.vaultId, personId: t2.people.owner.id, role: 'viewer', expect: 'existing' },
    testLogEntry({ vaultId: t2.vaultId, action: 'member_changed' }),
  )
  t.equal((await browser(t2.app).get(p2)).statusCode, 404)
})

t.test('by email through a local SMTP server: the link goes only to the address; the SMTP password never reaches the log', async (t) => {
  const sink = await smtpSink(t, { user: 'mailer', password: SMTP_PASSWORD })
  const s = await setUp(t, { ENVKEEP_SMTP_URL: `smtp://mailer:${SMTP_PASSWORD}@127.0.0.1:${sink.port}`, ENVKEEP_SMTP_FROM: 'envkeep <envkeep@example.com>' })
  const { res, token } = await s.invite('nina@example.com', 'viewer')
  t.equal(res.statusCode, 200)
  t.equal(token, '', 'the inviter never sees the link (issue 25)')
  t.match(res.body, 'Invitation sent')
  t.match(res.body, 'was sent to that address')
  t.same(sink.logins, ['mailer'])
  t.equal(sink.messages.length, 1)
  const mail = sink.messages[0]!
  t.same(mail.to, ['nina@example.com'])
  t.equal(mail.from, 'envkeep@example.com')
  t.match(mail.text, /Subject: Olga Owner invited you to Acme on envkeep/)
  t.match(mail.text, 'as viewer')
  const link = /http:\/\/\S+\/invite\/([A-Za-z0-9_-]{43})/.exec(mail.text)
  t.ok(link, 'the message has the link')
  t.match(s.log.text, 'invitation sent by email')
  for (const secret of [SMTP_PASSWORD, link?.[1] ?? 'none']) t.notOk(s.log.text.includes(secret), 'not in the log')
  // taking up the mailed link proves the address
  const accepted = await s.accept(new URL(link![0]).pathname)
  t.equal(accepted.res.statusCode, 303)
  t.equal((await s.accounts.findAccountByEmail('nina@example.com'))?.emailConfirmed, true)

  // an SMTP server that is not there: no invitation, no link; the owner is told to retry; the log says why in codes
  const down = await setUp(t, { ENVKEEP_SMTP_URL: `smtp://mailer:${SMTP_PASSWORD}@127.0.0.1:${await freePort()}`, ENVKEEP_SMTP_FROM: 'envkeep@example.com' })
  const r2 = await down.invite('nina@example.com')
  t.equal(r2.res.statusCode, 409)
  t.equal(r2.token, '', 'no link is shown')
  t.match(r2.res.body, 'the invitation email could not be sent')
  t.same(await invitationRows(down.storage), [], 'no invitation is left behind')
  t.match(down.log.text, 'invitation email not sent')
  t.notOk(down.log.text.includes(SMTP_PASSWORD))
})

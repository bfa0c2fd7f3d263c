import { randomUUID } from 'node:crypto'
import t, { type Test } from 'tap'
import { testLogEntry } from '@envkeep/env-api-plugin/testing'
import { addAccount, browser, buildTestApp, csrfOf, type TestApp } from './helpers.js'
import { smtpSink } from './smtp-sink.js'

// Issue 25, found by an attacker, item 1 (account pre-hijacking through invitations) and the
// low item "a person's name with a newline goes verbatim into invitation emails".
// SQLite here; PostgreSQL with ENVKEEP_TEST_STORAGE=postgres.

const PASSWORD = 'canary-hijack-password-1'
const HIJACK_PASSWORD = 'canary-attacker-password-2'
const LINK_RE = /<code id="invitation-link" class="value">http:\/\/[^<]+(\/invite\/[A-Za-z0-9_-]{43})<\/code>/

async function vaultOf(s: TestApp, ownerId: string, name: string): Promise<string> {
  const vaultId = randomUUID()
  await s.storage.createVault(
    { id: vaultId, name, ownerId, plan: 'self-hosted', environments: [{ name: 'development', ownersOnly: false }], now: new Date(s.clock.ms) },
    testLogEntry({ vaultId, action: 'vault_created' }),
  )
  return vaultId
}

async function signIn(s: TestApp, email: string, password: string) {
  const b = browser(s.app)
  const login = await b.get('/login')
  const res = await b.post('/login', { _csrf: csrfOf(login.body), email, password, return_to: '/' })
  const home = await b.get('/')
  return { b, res, csrf: home.statusCode === 200 && home.body.includes('name="_csrf"') ? csrfOf(home.body) : '' }
}

async function setUp(t: Test, env?: Record<string, string>) {
  const s = await buildTestApp(t, env ? { env } : {})
  const owner = await addAccount(s.accounts, 'olga@example.com', PASSWORD, 'Olga Owner')
  const mallory = await addAccount(s.accounts, 'mallory@example.com', PASSWORD, 'Mallory')
  const acme = await vaultOf(s, owner.id, 'Acme')
  const lure = await vaultOf(s, mallory.id, 'Lure')
  return { ...s, owner, mallory, acme, lure }
}

t.test('pre-hijacking without SMTP: an account made from a shown link is unconfirmed, and never gets the next invitation', async (t) => {
  const s = await setUp(t)
  // Mallory invites the victim's address to her own vault, opens the link she was shown, sets a password
  const m = await signIn(s, 'mallory@example.com', PASSWORD)
  const made = await m.b.post(`/v/${s.lure}/members/invite`, { _csrf: m.csrf, email: 'victim@example.com', role: 'viewer' })
  const path = LINK_RE.exec(made.body)?.[1] ?? ''
  t.ok(path, 'without SMTP the inviter is shown the link')
  const b = browser(s.app)
  const form = await b.get(path)
  const created = await b.post(path, { _csrf: csrfOf(form.body), name: 'Victim', password: HIJACK_PASSWORD, password2: HIJACK_PASSWORD })
  t.equal(created.statusCode, 303)
  const victim = await s.accounts.findAccountByEmail('victim@example.com')
  t.equal(victim?.emailConfirmed, false, 'the account is unconfirmed')

  // later the real owner invites that address, even as owner: nobody is added at once
  const o = await signIn(s, 'olga@example.com', PASSWORD)
  const invited = await o.b.post(`/v/${s.acme}/members/invite`, { _csrf: o.csrf, email: 'victim@example.com', role: 'owner' })
  t.equal(invited.statusCode, 200)
  t.match(invited.body, 'Invitation link')
  t.same(
    (await s.storage.listMembers(s.acme)).map((x) => x.personId),
    [s.owner.id],
    'the account Mallory holds is not a member',
  )
  // Mallory signs in as the victim: she is told of an invitation, but cannot take it without the link
  const h = await signIn(s, 'victim@example.com', HIJACK_PASSWORD)
  t.equal(h.res.headers.location, '/invitations?return_to=%2F')
  const notice = await h.b.get('/invitations')
  t.match(notice.body, 'never confirmed')
  t.notMatch(notice.body, 'name="invitation"', 'no Join button')
  const id = (await s.accounts.listInvitationsForEmail('victim@example.com', new Date(s.clock.ms)))[0]!.id
  const tried = await h.b.post('/invitations/join', { _csrf: h.csrf, invitation: id })
  t.equal(tried.statusCode, 303)
  t.equal(tried.headers.location, '/invitations')
  t.same(
    (await s.storage.listMembers(s.acme)).map((x) => x.personId),
    [s.owner.id],
    'still not a member',
  )
})

t.test('with SMTP: the link goes only to the address; the answer is the same with or without an account; adding tells the person', async (t) => {
  const sink = await smtpSink(t, { user: 'mailer', password: 'canary-smtp-password-h' })
  const s = await setUp(t, { ENVKEEP_SMTP_URL: `smtp://mailer:canary-smtp-password-h@127.0.0.1:${sink.port}`, ENVKEEP_SMTP_FROM: 'envkeep@example.com' })
  const o = await signIn(s, 'olga@example.com', PASSWORD)
  const answer = async (email: string) => {
    const res = await o.b.post(`/v/${s.acme}/members/invite`, { _csrf: o.csrf, email, role: 'editor' })
    return { status: res.statusCode, body: res.body.replaceAll(email, 'EMAIL').replace(/name="_csrf" value="[^"]+"/g, '') }
  }
  const known = await answer('mallory@example.com')
  const unknown = await answer('nobody@example.com')
  t.equal(known.status, 200)
  t.notMatch(known.body, '/invite/', 'no link shown')
  const section = (b: string) => b.slice(b.indexOf('id="invitation"'), b.indexOf('</section>', b.indexOf('id="invitation"')))
  t.equal(section(known.body), section(unknown.body), 'one answer, whether or not the email has an account')
  t.equal(sink.messages.length, 2, 'both were told by email')
  t.same(sink.messages[0]!.to, ['mallory@example.com'])
  // the plugin's direct "add" route gives the same answer (no "needs an account first" oracle)
  const add = await o.b.post(`/v/${s.acme}/members/add`, { _csrf: o.csrf, email: 'someone-else@example.com', role: 'viewer' })
  t.equal(add.statusCode, 200)
  t.match(add.body, 'Invitation sent')
  t.equal((await s.storage.listMembers(s.acme)).length, 1, 'nobody added at once')
})

t.test('names with a newline or other control characters never reach an email verbatim, and new ones are refused', async (t) => {
  const sink = await smtpSink(t, { user: 'mailer', password: 'canary-smtp-password-n' })
  const s = await setUp(t, { ENVKEEP_SMTP_URL: `smtp://mailer:canary-smtp-password-n@127.0.0.1:${sink.port}`, ENVKEEP_SMTP_FROM: 'envkeep@example.com' })
  // a name stored before names were checked
  const forged = await addAccount(s.accounts, 'eve@example.com', PASSWORD, 'Eve\r\nBcc: all@example.com\n\nYour account is locked: https://evil.example/\u202e')
  const vault = await vaultOf(s, forged.id, 'Evil\nVault')
  const e = await signIn(s, 'eve@example.com', PASSWORD)
  const res = await e.b.post(`/v/${vault}/members/invite`, { _csrf: e.csrf, email: 'target@example.com', role: 'viewer' })
  t.equal(res.statusCode, 200)
  t.equal(sink.messages.length, 1)
  const mail = sink.messages[0]!
  t.same(mail.to, ['target@example.com'], 'no injected recipient')
  t.notMatch(mail.text, /^Bcc:/im, 'no injected header')
  t.notMatch(mail.text, /^Your account is locked/m, 'no forged line in the body')
  t.match(mail.text, 'Eve Bcc: all@example.com Your account is locked: https://evil.example/ (eve@example.com) invited you to the vault "Evil Vault"')
  t.notOk(mail.text.includes('\u202e'), 'no bidi override')

  // the forms refuse such names
  const m = await signIn(s, 'olga@example.com', PASSWORD)
  const made = await m.b.post(`/v/${s.acme}/members/invite`, { _csrf: m.csrf, email: 'newbie@example.com', role: 'viewer' })
  t.equal(made.statusCode, 200)
  const link = /http:\/\/\S+(\/invite\/[A-Za-z0-9_-]{43})/.exec(sink.messages[1]?.text ?? '')?.[1] ?? ''
  const b = browser(s.app)
  const form = await b.get(link)
  const refused = await b.post(link, { _csrf: csrfOf(form.body), name: 'New\nBie', password: PASSWORD, password2: PASSWORD })
  t.equal(refused.statusCode, 400)
  t.match(refused.body, 'a name cannot hold line breaks')
  t.equal(await s.accounts.findAccountByEmail('newbie@example.com'), null)
})

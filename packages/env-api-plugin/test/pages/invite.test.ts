import t from 'tap'
import type { InvitationRequest, PeopleAdapter, PendingInvitation } from '../../src/adapters/people.js'
import { DomainFailure } from '../../src/domain/failure.js'
import { build, createTestPeople, PEOPLE, session } from './helpers.js'

const LINK = 'https://envkeep.example/invite/canary-invitation-token-4b1d'

/** The test people with the invitation hooks, recording what they were asked. */
function invitingPeople(o: { refuse?: DomainFailure; emailed?: boolean } = {}) {
  const calls: InvitationRequest[] = []
  const revoked: [string, string][] = []
  const pending: PendingInvitation[] = []
  const people: PeopleAdapter = {
    ...createTestPeople(),
    async invite(input) {
      calls.push(input)
      if (o.refuse) throw o.refuse
      pending.push({
        id: `inv-${calls.length}`,
        email: input.email,
        role: input.role,
        invitedBy: input.invitedBy.id,
        createdAt: new Date('2026-11-21T12:00:00Z'),
        expiresAt: new Date('2026-11-28T12:00:00Z'),
      })
      return { link: LINK, ...(o.emailed ? { emailed: true } : {}) }
    },
    async listInvitations(vaultId) {
      return vaultId ? [...pending] : []
    },
    async revokeInvitation(vaultId, id) {
      revoked.push([vaultId, id])
      const i = pending.findIndex((p) => p.id === id)
      if (i < 0) return false
      pending.splice(i, 1)
      return true
    },
  }
  return { people, calls, revoked, pending }
}

t.test('without the hook: an account is added at once; anyone else needs an account first', async (t) => {
  const b = await build(t)
  const s = session(b.app, 'owner')
  const url = `/v/${b.vaultId}`
  const page = await s.get(`${url}/members`)
  t.match(page.body, '<h3>Invite</h3>')
  t.match(page.body, 'The person needs an account already.')
  t.notMatch(page.body, 'Pending invitations')
  const added = await s.post(`${url}/members/invite`, { email: ' Oscar@Example.test ', role: 'viewer' })
  t.equal(added.statusCode, 303)
  t.equal(added.headers.location, `${url}/members?done=member_added`)
  const roles = Object.fromEntries((await b.storage.listMembers(b.vaultId)).map((m) => [m.personId, m.role]))
  t.equal(roles[PEOPLE.outsider!.id], 'viewer')
  const unknown = await s.post(`${url}/members/invite`, { email: 'newcomer@example.test', role: 'editor' })
  t.equal(unknown.statusCode, 404)
  t.match(unknown.body, 'the person needs an account first')
  t.notMatch(unknown.body, 'Invitation link')
})

t.test('with the hook: someone without an account gets a link, shown once; pending invitations listed and revoked', async (t) => {
  const inv = invitingPeople({ emailed: true })
  const b = await build(t, { people: inv.people, vaultName: 'Shop' })
  const s = session(b.app, 'owner')
  const url = `/v/${b.vaultId}`
  const page = await s.get(`${url}/members`)
  t.match(page.body, 'anyone else gets an invitation link')

  // an existing account: added at once, the hook is not asked
  t.equal((await s.post(`${url}/members/invite`, { email: PEOPLE.outsider!.email, role: 'editor' })).statusCode, 303)
  t.equal(inv.calls.length, 0)

  const res = await s.post(`${url}/members/invite`, { email: ' new.person@example.test ', role: 'viewer' })
  t.equal(res.statusCode, 200)
  t.equal(res.headers['cache-control'], 'no-store, private')
  t.match(res.body, '<h3 id="invitation-title">Invitation link</h3>')
  t.match(res.body, `<code id="invitation-link" class="value">${LINK}</code>`)
  t.match(res.body, 'It was also sent to that address.')
  t.same(inv.calls, [{ email: 'new.person@example.test', role: 'viewer', vaultId: b.vaultId, vaultName: 'Shop', invitedBy: PEOPLE.owner }])
  t.notOk(b.logs.join('\n').includes(LINK), 'the link never reaches the log')

  // shown once: the page itself lists the invitation, never its link
  const again = await s.get(`${url}/members`)
  t.notMatch(again.body, LINK)
  t.match(again.body, 'Pending invitations')
  const row = again.body.slice(again.body.indexOf('<table class="stack invitations">'))
  t.match(row, 'new.person@example.test')
  t.match(row, 'Olga Owner')
  t.match(row, '<time datetime="2026-11-28T12:00:00.000Z">')
  t.match(row, 'name="invitation" value="inv-1"')

  const revoke = await s.post(`${url}/members/invitations/revoke`, { invitation: 'inv-1' })
  t.equal(revoke.statusCode, 303)
  t.equal(revoke.headers.location, `${url}/members?done=invitation_revoked`)
  t.same(inv.revoked, [[b.vaultId, 'inv-1']])
  t.notMatch((await s.get(`${url}/members`)).body, 'Pending invitations')
  const twice = await s.post(`${url}/members/invitations/revoke`, { invitation: 'inv-1' })
  t.equal(twice.statusCode, 404)
  t.match(twice.body, 'no longer pending')
})

t.test('only owners invite, see and revoke invitations', async (t) => {
  const inv = invitingPeople()
  const b = await build(t, { people: inv.people })
  const owner = session(b.app, 'owner')
  await owner.get(`/v/${b.vaultId}`)
  await owner.post(`/v/${b.vaultId}/members/invite`, { email: 'someone@example.test', role: 'owner' })
  t.equal(inv.pending.length, 1)
  for (const who of ['editor', 'viewer']) {
    const s = session(b.app, who)
    const url = `/v/${b.vaultId}`
    const page = await s.get(`${url}/members`)
    t.notMatch(page.body, '>Invite<', `${who}: no Invite form`)
    t.notMatch(page.body, 'someone@example.test', `${who}: no pending invitations`)
    await s.get('/') // a page with a form, for a CSRF token: the POSTs below must fail on the role, not on CSRF
    const invite = await s.post(`${url}/members/invite`, { email: 'other@example.test', role: 'owner' })
    t.equal(invite.statusCode, 403, `${who}: invite refused`)
    t.match(invite.body, 'only owners can')
    t.equal((await s.post(`${url}/members/invitations/revoke`, { invitation: 'inv-1' })).statusCode, 403, `${who}: revoke refused`)
  }
  t.equal(inv.calls.length, 1, 'the hook was asked by the owner only')
  t.same(inv.revoked, [])
  // someone outside the vault: not found, as for every vault they cannot see
  const outsider = session(b.app, 'outsider')
  await outsider.get('/')
  t.equal((await outsider.post(`/v/${b.vaultId}/members/invite`, { email: 'x@example.test', role: 'viewer' })).statusCode, 404)
})

t.test('bad input, a refusal of the host and a missing CSRF token', async (t) => {
  const inv = invitingPeople({ refuse: new DomainFailure('forbidden', 'invitations are turned off on this service') })
  const b = await build(t, { people: inv.people })
  const s = session(b.app, 'owner')
  const url = `/v/${b.vaultId}`
  await s.get(url)
  t.equal((await s.post(`${url}/members/invite`, { email: 'x@example.test', role: 'admin' })).statusCode, 400, 'unknown role')
  t.equal((await s.post(`${url}/members/invite`, { email: 'not an email', role: 'viewer' })).statusCode, 400, 'not an email')
  t.equal((await s.post(`${url}/members/invite`, { email: PEOPLE.editor!.email, role: 'viewer' })).statusCode, 409, 'already a member')
  t.equal(inv.calls.length, 0)
  const refused = await s.post(`${url}/members/invite`, { email: 'x@example.test', role: 'viewer' })
  t.equal(refused.statusCode, 403)
  t.match(refused.body, 'invitations are turned off on this service')
  t.notMatch(refused.body, 'Invitation link')
  const noCsrf = await s.post(`${url}/members/invite`, { email: 'y@example.test', role: 'viewer' }, { csrf: false })
  t.equal(noCsrf.statusCode, 403)
  t.equal(inv.calls.length, 1)
})

t.test('sending and revoking an invitation are logged; the email only for owners, never the link (issue 25)', async (t) => {
  const inv = invitingPeople()
  const b = await build(t, { people: inv.people })
  const owner = session(b.app, 'owner')
  const url = `/v/${b.vaultId}`
  await owner.get(`${url}/members`)
  t.equal((await owner.post(`${url}/members/invite`, { email: 'new.person@example.test', role: 'editor' })).statusCode, 200)
  const [sent] = await b.storage.listAccessLog(b.vaultId, { action: 'invitation_sent', limit: 5 })
  t.equal(sent?.personId, PEOPLE.owner!.id)
  t.equal(sent?.detail, 'editor: new.person@example.test')
  await owner.get(`${url}/members`)
  t.equal((await owner.post(`${url}/members/invitations/revoke`, { invitation: 'inv-1' })).statusCode, 303)
  const [revoked] = await b.storage.listAccessLog(b.vaultId, { action: 'invitation_revoked', limit: 5 })
  t.equal(revoked?.detail, 'editor: new.person@example.test')
  const all = JSON.stringify(await b.storage.listAccessLog(b.vaultId, { limit: 100 }))
  t.notMatch(all, 'canary-invitation-token', 'never the link or its token')

  const ownerLog = await owner.get(`${url}/access-log`)
  t.match(ownerLog.body, 'invitation sent')
  t.match(ownerLog.body, 'new.person@example.test', 'owners see the email')
  const editorLog = await session(b.app, 'editor').get(`${url}/access-log`)
  t.match(editorLog.body, 'invitation revoked')
  t.notMatch(editorLog.body, 'new.person@example.test', 'others do not')
  t.match(editorLog.body, 'editor: email shown to owners')
})

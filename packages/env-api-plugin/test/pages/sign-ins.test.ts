import { createHash, randomBytes, randomUUID } from 'node:crypto'
import t from 'tap'
import { build, PEOPLE, session } from './helpers.js'

const hash = (s: string) => createHash('sha256').update(s).digest('hex')

async function makeSignIn(b: Awaited<ReturnType<typeof build>>, personId: string, scopes: string[]) {
  const now = b.clock.now
  const code = hash(randomBytes(16).toString('hex'))
  const clientId = 'http://127.0.0.1/cli/oauth-client.json'
  await b.storage.saveAuthorizationCode({
    codeHash: code, clientId, redirectUri: 'http://127.0.0.1:5555/callback', codeChallenge: 'x', resource: 'http://127.0.0.1/api/env',
    scopes, personId, createdAt: now, expiresAt: new Date(now.getTime() + 60_000), consumedAt: null,
  })
  const r = await b.storage.exchangeAuthorizationCode(
    code,
    { id: randomUUID(), personId, clientId, resource: 'http://127.0.0.1/api/env', scopes, createdAt: now, expiresAt: new Date(now.getTime() + 365 * 86_400_000) },
    { accessTokenHash: hash(randomBytes(16).toString('hex')), accessExpiresAt: new Date(now.getTime() + 3_600_000), refreshTokenHash: hash(randomBytes(16).toString('hex')) },
    now,
  )
  if (r.outcome !== 'issued') throw new Error('no sign-in')
  return r.signIn.id
}

t.test('sign-ins: listed with created, last used, can push; Revoke ends one', async (t) => {
  const b = await build(t)
  const pushId = await makeSignIn(b, PEOPLE.owner!.id, ['env:read', 'env:push'])
  const readId = await makeSignIn(b, PEOPLE.owner!.id, ['env:read'])
  const otherId = await makeSignIn(b, PEOPLE.editor!.id, ['env:read'])
  const s = session(b.app, 'owner')
  const page = await s.get('/sign-ins')
  t.equal(page.statusCode, 200)
  for (const label of ['<h1>Sign-ins</h1>', '<th>Created</th>', '<th>Last used</th>', '<th>Can push</th>', 'envkeep command line']) t.match(page.body, label)
  t.equal(page.body.match(/>Revoke</g)?.length, 2, 'one Revoke per active sign-in of this person')
  t.match(page.body, new RegExp(`<td data-label="Can push">yes</td>[\\s\\S]*value="${pushId}"`))
  t.notMatch(page.body, otherId, "another person's sign-in is not listed")

  t.equal((await s.post('/sign-ins/revoke', { sign_in: readId }, { csrf: false })).statusCode, 403, 'CSRF-less revoke refused')
  const res = await s.post('/sign-ins/revoke', { sign_in: readId })
  t.equal(res.statusCode, 303)
  t.equal(res.headers.location, '/sign-ins?done=revoked')
  const after = await s.get('/sign-ins?done=revoked')
  t.match(after.body, 'The sign-in was revoked.')
  t.equal(after.body.match(/>Revoke</g)?.length, 1)
  t.match(after.body, 'status-revoked')
  const list = await b.storage.listSignIns(PEOPLE.owner!.id)
  t.ok(list.find((x) => x.id === readId)?.revokedAt)
  t.notOk(list.find((x) => x.id === pushId)?.revokedAt)

  const theirs = await s.post('/sign-ins/revoke', { sign_in: otherId })
  t.equal(theirs.statusCode, 404, "cannot revoke another person's sign-in")
  t.match(theirs.body, /Revoking a sign-in failed: .+Reference: <code>/)
  t.notOk((await b.storage.listSignIns(PEOPLE.editor!.id))[0]?.revokedAt)
})

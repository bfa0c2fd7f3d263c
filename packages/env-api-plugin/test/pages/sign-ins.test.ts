import t from 'tap'
import { mintSignIn } from '../../src/testing/sign-in.js'
import { build, PEOPLE, session } from './helpers.js'

async function makeSignIn(b: Awaited<ReturnType<typeof build>>, personId: string, scopes: string[]) {
  const minted = await mintSignIn(b.storage, { baseUrl: 'http://127.0.0.1', personId, scopes, now: b.clock.now })
  return minted.signInId
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

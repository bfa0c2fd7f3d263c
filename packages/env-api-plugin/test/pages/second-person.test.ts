import t, { type Test } from 'tap'
import { stagedValues } from '@envkeep/env-api-plugin/testing'
import { ADMINISTRATOR } from '../../src/index.js'
import { storageUnderTest } from '../storage-under-test.js'
import { domainOf } from '../webhooks/helpers.js'
import { build, PEOPLE, session } from './helpers.js'

// Issue 25 (attacker 3): "Require a second person" bound only pushes. With the rule on, every
// change of values on the pages (add, change, delete, revert, restore) goes through a push that
// someone else decides; the pages offer "Propose". The server administrator is the break-glass.

const REVIEW = /\/v\/[^/]+\/variables\/imports\/([0-9a-f-]{36})$/

async function withRule(t: Test) {
  const b = await build(t, { storage: await storageUnderTest(t) })
  const owner = session(b.app, 'owner')
  await owner.get(`/v/${b.vaultId}/settings`)
  t.teardown(() => undefined)
  const r = await owner.post(`/v/${b.vaultId}/settings/environment`, { environment: 'development', second_person: 'on' })
  if (r.statusCode !== 303) throw new Error(`could not turn the rule on: ${r.statusCode}`)
  return { b, owner, editor: session(b.app, 'editor') }
}

t.test('add and change become pushes by their author, which only someone else can apply', async (t) => {
  const { b, owner, editor } = await withRule(t)
  const page = await editor.get(`/v/${b.vaultId}?env=development`)
  t.match(page.body, 'requires a second person')
  t.match(page.body, '>Propose<')
  t.notMatch(page.body, '>Add variable<', 'the page offers Propose, not Add')

  const added = await editor.post(`/v/${b.vaultId}/variables/add`, { environment: 'development', name: 'API_KEY', value: 'proposed-canary' })
  t.equal(added.statusCode, 303)
  const id = REVIEW.exec(String(added.headers.location))?.[1]
  t.ok(id, 'the answer leads to the review page of the new push')
  t.same(await b.current('development'), {}, 'nothing was written')
  const push = await b.storage.getImport(id!, b.clock.now)
  t.equal(push?.status, 'pending')
  t.equal(push?.senderId, PEOPLE.editor!.id)
  t.same(push?.names, ['API_KEY'])

  // the author cannot apply their own proposal
  await editor.get(`/v/${b.vaultId}/variables/imports/${id}`)
  t.equal((await editor.post(`/v/${b.vaultId}/variables/imports/${id}/apply`, {})).statusCode, 403)
  t.same(await b.current('development'), {})
  // someone else can
  await owner.get(`/v/${b.vaultId}/variables/imports/${id}`)
  t.equal((await owner.post(`/v/${b.vaultId}/variables/imports/${id}/apply`, {})).statusCode, 303)
  t.same(await b.current('development'), { API_KEY: 'proposed-canary' })

  // a change, by the owner this time: proposed too, the owner cannot apply it
  await owner.get(`/v/${b.vaultId}?env=development`)
  const changed = await owner.post(`/v/${b.vaultId}/variables/change`, { environment: 'development', name: 'API_KEY', value: 'changed-canary' })
  t.equal(changed.statusCode, 303)
  const id2 = REVIEW.exec(String(changed.headers.location))?.[1]
  t.ok(id2)
  t.same(await b.current('development'), { API_KEY: 'proposed-canary' })
  await owner.get(`/v/${b.vaultId}/variables/imports/${id2}`)
  t.equal((await owner.post(`/v/${b.vaultId}/variables/imports/${id2}/apply`, {})).statusCode, 403)
  // "add" of a name that exists is still refused, and "change" of one that does not
  t.equal((await owner.post(`/v/${b.vaultId}/variables/add`, { environment: 'development', name: 'API_KEY', value: 'x-canary' })).statusCode, 409)
  t.equal((await owner.post(`/v/${b.vaultId}/variables/change`, { environment: 'development', name: 'NOPE', value: 'x-canary' })).statusCode, 404)
})

t.test('delete, revert and restore become pushes too, a deletion included, which only someone else can apply', async (t) => {
  const { b, owner, editor } = await withRule(t)
  const domain = domainOf(b)
  // values put in by the server administrator, the break-glass, which is not bound (and logged as such)
  await domain.writeVariable(ADMINISTRATOR, { vaultId: b.vaultId, environment: 'development', name: 'A', value: 'one-canary', mode: 'set' })
  await domain.writeVariable(ADMINISTRATOR, { vaultId: b.vaultId, environment: 'development', name: 'A', value: 'two-canary', mode: 'set' })
  await domain.writeVariable(ADMINISTRATOR, { vaultId: b.vaultId, environment: 'development', name: 'GONE', value: 'gone-canary', mode: 'set' })
  t.same(await b.current('development'), { A: 'two-canary', GONE: 'gone-canary' }, 'the administrator writes directly')
  const [entry] = await b.storage.listAccessLog(b.vaultId, { action: 'variable_set', limit: 1 })
  t.equal(entry?.personId, null, 'logged as the server administrator')
  t.equal(entry?.clientId, 'envkeep-server')

  // Delete by the editor ("Ana"): a pending push that deletes the name, nothing deleted yet
  const page = await editor.get(`/v/${b.vaultId}?env=development`)
  t.match(page.body, '>Propose deletion<', 'Delete is offered as a proposal')
  const del = await editor.post(`/v/${b.vaultId}/variables/delete`, { environment: 'development', name: 'GONE' })
  t.equal(del.statusCode, 303)
  const delId = REVIEW.exec(String(del.headers.location))?.[1]
  t.ok(delId, 'the deletion became a push')
  t.same(await b.current('development'), { A: 'two-canary', GONE: 'gone-canary' }, 'nothing deleted yet')
  const push = await b.storage.getImport(delId!, b.clock.now)
  t.same(push?.deletes, ['GONE'])
  t.same(push?.names, ['GONE'])
  t.same(await stagedValues(b.storage, delId!), [], 'no value is staged for a deletion')
  t.equal(
    (await editor.post(`/v/${b.vaultId}/variables/delete`, { environment: 'development', name: 'NOPE' })).statusCode,
    404,
    'an unknown name is not proposed',
  )
  // the author cannot apply it
  await editor.get(`/v/${b.vaultId}/variables/imports/${delId}`)
  t.equal((await editor.post(`/v/${b.vaultId}/variables/imports/${delId}/apply`, {})).statusCode, 403)
  t.same(await b.current('development'), { A: 'two-canary', GONE: 'gone-canary' })
  // the owner ("Bo") sees it marked "to delete" and applies it
  const review = await owner.get(`/v/${b.vaultId}/variables/imports/${delId}`)
  t.match(review.body, 'mark-delete')
  t.match(review.body, '>to delete<')
  t.equal((await owner.post(`/v/${b.vaultId}/variables/imports/${delId}/apply`, {})).statusCode, 303)
  t.same(await b.current('development'), { A: 'two-canary' }, 'the variable is gone')
  const [deletion] = await b.storage.listChangeSets(b.vaultId, { environment: 'development', limit: 1 })
  t.same(deletion?.deleted, ['GONE'], 'history shows the deletion')
  t.equal(deletion?.how, 'push')
  t.equal(deletion?.ref, delId)
  t.equal(deletion?.by, PEOPLE.owner!.id)
  const [applied] = await b.storage.listAccessLog(b.vaultId, { action: 'push_applied', limit: 1 })
  t.same(applied?.names, ['GONE'], 'the log entry names the deleted variable')
  const changePage = await owner.get(`/v/${b.vaultId}/changes/${deletion!.id}`)
  t.match(changePage.body, 'GONE')

  // revert the second change of A: proposed as a push writing A back to one-canary
  const sets = await b.storage.listChangeSets(b.vaultId, { environment: 'development', limit: 10 })
  const second = sets.find((c) => c.changed.includes('A'))
  const plan = await owner.get(`/v/${b.vaultId}/changes/${second!.id}/revert`)
  t.match(plan.body, '>Propose<')
  const version = /name="version" value="([0-9]+)"/.exec(plan.body)?.[1] ?? ''
  const reverted = await owner.post(`/v/${b.vaultId}/changes/${second!.id}/revert`, { version, also: '' })
  t.equal(reverted.statusCode, 303)
  const id = REVIEW.exec(String(reverted.headers.location))?.[1]
  t.ok(id, 'the revert became a push')
  t.same(await b.current('development'), { A: 'two-canary' }, 'nothing written yet')
  await editor.get(`/v/${b.vaultId}/variables/imports/${id}`)
  t.equal((await editor.post(`/v/${b.vaultId}/variables/imports/${id}/apply`, {})).statusCode, 303)
  t.same(await b.current('development'), { A: 'one-canary' }, 'applied by the other person')

  // restoring to right after A's first change deletes B, added since: proposed, deleted when applied
  const first = sets.at(-1)
  await domain.writeVariable(ADMINISTRATOR, { vaultId: b.vaultId, environment: 'development', name: 'B', value: 'b-canary', mode: 'set' })
  const restore = await owner.get(`/v/${b.vaultId}/changes/${first!.id}/restore`)
  t.match(restore.body, '>Propose<')
  const v2 = /name="version" value="([0-9]+)"/.exec(restore.body)?.[1] ?? ''
  const restored = await owner.post(`/v/${b.vaultId}/changes/${first!.id}/restore`, { version: v2, also: '' })
  t.equal(restored.statusCode, 303)
  const rid = REVIEW.exec(String(restored.headers.location))?.[1]
  t.ok(rid, 'the restore became a push')
  t.same((await b.storage.getImport(rid!, b.clock.now))?.deletes, ['B'])
  t.same(await b.current('development'), { A: 'one-canary', B: 'b-canary' }, 'nothing deleted yet')
  await owner.get(`/v/${b.vaultId}/variables/imports/${rid}`)
  t.equal((await owner.post(`/v/${b.vaultId}/variables/imports/${rid}/apply`, {})).statusCode, 403, 'not by its author')
  await editor.get(`/v/${b.vaultId}/variables/imports/${rid}`)
  t.equal((await editor.post(`/v/${b.vaultId}/variables/imports/${rid}/apply`, {})).statusCode, 303)
  t.same(await b.current('development'), { A: 'one-canary' }, 'B deleted by the other person')
  const [last] = await b.storage.listChangeSets(b.vaultId, { environment: 'development', limit: 1 })
  t.same(last?.deleted, ['B'])

  // a rejected deletion deletes nothing
  await owner.get(`/v/${b.vaultId}?env=development`)
  const again = await owner.post(`/v/${b.vaultId}/variables/delete`, { environment: 'development', name: 'A' })
  const aid = REVIEW.exec(String(again.headers.location))?.[1]
  await editor.get(`/v/${b.vaultId}/variables/imports/${aid}`)
  t.equal((await editor.post(`/v/${b.vaultId}/variables/imports/${aid}/reject`, { reason: '' })).statusCode, 303)
  t.same(await b.current('development'), { A: 'one-canary' }, 'nothing deleted')
  t.equal((await b.storage.getImport(aid!, b.clock.now))?.status, 'rejected')
})

t.test('without the rule, the pages change values directly as before', async (t) => {
  const b = await build(t, { storage: await storageUnderTest(t) })
  const editor = session(b.app, 'editor')
  const page = await editor.get(`/v/${b.vaultId}?env=development`)
  t.match(page.body, '>Add variable<')
  const r = await editor.post(`/v/${b.vaultId}/variables/add`, { environment: 'development', name: 'A', value: 'direct-canary' })
  t.equal(r.statusCode, 303)
  t.notMatch(String(r.headers.location), 'imports')
  t.same(await b.current('development'), { A: 'direct-canary' })
})

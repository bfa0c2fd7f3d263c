import t, { type Test } from 'tap'
import { randomBytes } from 'node:crypto'
import { storageUnderTest } from '../storage-under-test.js'
import { tamper } from '../api/helpers.js'
import { build, session } from './helpers.js'

// Issue 25: a live value that no longer decrypts blocked every write to that name, even its
// deletion. An owner may delete or overwrite it, logged; its history "before" is recorded as
// unreadable, not guessed. Others still get decrypt_failed.

async function setup(t: Test) {
  const b = await build(t, { storage: await storageUnderTest(t) })
  const owner = session(b.app, 'owner')
  await owner.get(`/v/${b.vaultId}?env=development`)
  for (const [name, value] of [
    ['BROKEN', 'broken-canary'],
    ['FINE', 'fine-canary'],
    ['GONE', 'gone-canary'],
  ]) {
    t.equal((await owner.post(`/v/${b.vaultId}/variables/add`, { environment: 'development', name: name!, value: value! })).statusCode, 303)
  }
  // as if the stored bytes were damaged (or sealed under a key that is lost)
  await tamper.setSealed(b.storage, b.vaultId, 'BROKEN', new Uint8Array(randomBytes(60)))
  await tamper.setSealed(b.storage, b.vaultId, 'GONE', new Uint8Array(randomBytes(60)))
  return { b, owner }
}

t.test('an owner overwrites and deletes values that no longer open; logged, recorded as unreadable', async (t) => {
  const { b, owner } = await setup(t)
  const editor = session(b.app, 'editor')
  await editor.get(`/v/${b.vaultId}?env=development`)
  const refused = await editor.post(`/v/${b.vaultId}/variables/change`, { environment: 'development', name: 'BROKEN', value: 'editor-canary' })
  t.equal(refused.statusCode, 500, 'an editor still gets decrypt_failed')
  t.equal((await editor.post(`/v/${b.vaultId}/variables/delete`, { environment: 'development', name: 'GONE' })).statusCode, 500)
  // another name of the same environment can still be changed by anyone who may
  t.equal((await editor.post(`/v/${b.vaultId}/variables/change`, { environment: 'development', name: 'FINE', value: 'fine-2-canary' })).statusCode, 303)

  t.equal((await owner.post(`/v/${b.vaultId}/variables/add`, { environment: 'development', name: 'BROKEN', value: 'x' })).statusCode, 409, 'it still exists')
  const changed = await owner.post(`/v/${b.vaultId}/variables/change`, { environment: 'development', name: 'BROKEN', value: 'new-canary' })
  t.equal(changed.statusCode, 303)
  const deleted = await owner.post(`/v/${b.vaultId}/variables/delete`, { environment: 'development', name: 'GONE' })
  t.equal(deleted.statusCode, 303)
  t.same(await b.current('development'), { BROKEN: 'new-canary', FINE: 'fine-2-canary' }, 'every value opens again')

  const [del, set] = await b.storage.listAccessLog(b.vaultId, { limit: 2 })
  t.same([del?.action, del?.names, del?.detail], ['variable_deleted', ['GONE'], 'replaced a value that could not be opened: GONE'])
  t.same([set?.action, set?.names, set?.detail], ['variable_set', ['BROKEN'], 'replaced a value that could not be opened: BROKEN'])

  // history: the change sets say changed and deleted; "before" could not be opened, nothing guessed
  const [gone, broken] = await b.storage.listChangeSets(b.vaultId, { environment: 'development', limit: 2 })
  const page = await owner.get(`/v/${b.vaultId}/changes/${broken!.id}`)
  t.match(page.body, 'mark-changed')
  const revealed = await owner.post(`/v/${b.vaultId}/changes/${broken!.id}/reveal`, {})
  t.equal(revealed.statusCode, 200)
  t.match(revealed.body, '(could not be opened)')
  t.match(revealed.body, 'new-canary')
  const goneRevealed = await owner.post(`/v/${b.vaultId}/changes/${gone!.id}/reveal`, {})
  t.match(goneRevealed.body, 'mark-deleted')
  t.match(goneRevealed.body, '(could not be opened)')
  t.notMatch(goneRevealed.body, 'gone-canary')
  // reverting the deletion has nothing to go back to: nothing written
  const plan = await owner.get(`/v/${b.vaultId}/changes/${gone!.id}/revert`)
  t.match(plan.body, 'Will be written (0)')
})

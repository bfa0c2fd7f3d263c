import t from 'tap'
import { stagedValues } from '@envkeep/env-api-plugin/testing'
import { requireSecondPerson } from './storage-under-test.js'
import { decideImport } from '../src/index.js'
import { build } from './api/helpers.js'

t.test('who may decide a push', async (t) => {
  // [decider, role, environment, decider is sender, vault requires a second person, outcome]
  const cases: Array<[string, string, string, boolean, boolean, string]> = [
    ["owner decides another person's push", 'owner', 'production', false, false, 'decided'],
    ['owner decides their own push', 'owner', 'development', true, false, 'decided'],
    ['owner may not decide their own when a second person is required', 'owner', 'development', true, true, 'forbidden'],
    ["owner decides another's when a second person is required", 'owner', 'development', false, true, 'decided'],
    ['editor on a shared environment', 'editor', 'development', false, false, 'decided'],
    ['editor decides their own push', 'editor', 'development', true, false, 'decided'],
    ['editor on an owners-only environment', 'editor', 'production', false, false, 'forbidden'],
    ['viewer', 'viewer', 'development', false, false, 'forbidden'],
    ['not a member', 'none', 'development', false, false, 'not_found'],
  ]
  for (const [name, role, env, isSender, second, outcome] of cases) {
    t.test(name, async (t) => {
      const b = await build(t)
      // olga owns the vault; dee decides with the role of the case; olga sends unless dee is the sender
      const members: Record<string, 'owner' | 'editor' | 'viewer'> = {}
      if (role !== 'none') members.dee = role as 'owner' | 'editor' | 'viewer'
      const v = await b.createVault('olga', { members })
      if (second) {
        await requireSecondPerson(b.storage, v)
      }
      const token = await b.signIn(isSender ? 'dee' : 'olga')
      const res = await b.push(v, env, token, { variables: { A: 'value-a' } })
      t.equal(res.statusCode, 201, 'push created')
      const id = res.json().import as string
      const out = await decideImport(b.storage, { importId: id, decision: 'applied', personId: 'dee', now: b.clock.now, keyring: b.keyring })
      t.equal(out.outcome, outcome)
      const imp = await b.storage.getImport(id, b.clock.now)
      t.equal(imp?.status, outcome === 'decided' ? 'applied' : 'pending')
      if (outcome === 'decided') {
        const log = await b.storage.listAccessLog(v, { action: 'push_applied', limit: 5 })
        t.same(
          log.map((e) => [e.personId, e.names]),
          [['dee', ['A']]],
        )
        t.equal(imp?.decidedBy, 'dee')
      }
    })
  }
})

t.test('reject, and a decided or expired push does not change', async (t) => {
  const b = await build(t)
  const v = await b.createVault('olga')
  const token = await b.signIn('olga')
  await b.setValues(v, 'development', { A: 'old' })
  const a = (await b.push(v, 'development', token, { variables: { A: 'new', B: 'b' } })).json().import as string
  const r = await decideImport(b.storage, { importId: a, decision: 'rejected', personId: 'olga', now: b.clock.now, keyring: b.keyring })
  t.equal(r.outcome, 'decided')
  t.equal((await b.storage.getImport(a, b.clock.now))?.status, 'rejected')
  t.same(await stagedValues(b.storage, a), [], 'staged values are deleted once decided')
  const again = await decideImport(b.storage, { importId: a, decision: 'applied', personId: 'olga', now: b.clock.now, keyring: b.keyring })
  t.equal(again.outcome, 'not_pending')
  t.same((await b.get(`/api/env/${v}/development`, token)).json().variables, { A: 'old' }, 'nothing applied')

  const late = (await b.push(v, 'development', token, { variables: { A: 'late' } })).json()
  const after = new Date(new Date(late.expires_at).getTime())
  const expired = await decideImport(b.storage, { importId: late.import, decision: 'applied', personId: 'olga', now: after, keyring: b.keyring })
  t.equal(expired.outcome, 'not_pending')
  t.equal((await b.storage.getImport(late.import, after))?.status, 'expired')
  t.equal(
    (await decideImport(b.storage, { importId: '3f2a9c1e-0000-4000-8000-00000000dead', decision: 'applied', personId: 'olga', now: after, keyring: b.keyring }))
      .outcome,
    'not_found',
  )
})

t.test('apply writes every value at once, overwriting', async (t) => {
  const b = await build(t)
  const v = await b.createVault('olga')
  const token = await b.signIn('olga')
  await b.setValues(v, 'development', { A: 'old', KEEP: 'k' })
  const id = (await b.push(v, 'development', token, { variables: { A: 'new', B: 'b', C: 'c' } })).json().import as string
  t.equal((await decideImport(b.storage, { importId: id, decision: 'applied', personId: 'olga', now: b.clock.now, keyring: b.keyring })).outcome, 'decided')
  t.same((await b.get(`/api/env/${v}/development`, token)).json().variables, { A: 'new', B: 'b', C: 'c', KEEP: 'k' })
})

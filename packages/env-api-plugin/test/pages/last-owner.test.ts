import t from 'tap'
import { createMemoryStorage } from '../../src/testing/index.js'
import { build, PEOPLE, session } from './helpers.js'

// Hardening finding 8: "a vault keeps at least one owner" was checked, then
// acted on, in separate storage calls. Two owners demoting (or removing)
// each other at once could both pass the check. The rule now holds inside
// storage's transaction: exactly one of the two wins. Run on SQLite and on
// the memory store yielding to the event loop between the steps of every
// transaction, as a networked database would.

const stores = [
  ['SQLite', () => undefined],
  ['memory, yielding between steps', () => createMemoryStorage({ yieldBetweenSteps: true })],
] as const

for (const [label, makeStorage] of stores) {
  for (const how of ['demote', 'remove'] as const) {
    t.test(`${label}: two owners who ${how} each other at once leave one owner (10 rounds)`, async (t) => {
      for (let round = 0; round < 10; round++) {
        const storage = makeStorage()
        const b = await build(t, storage ? { storage } : {})
        const url = `/v/${b.vaultId}`
        const olga = session(b.app, 'owner')
        const ed = session(b.app, 'editor')
        await olga.get(url)
        t.equal((await olga.post(`${url}/members/change`, { person: PEOPLE.editor!.id, role: 'owner' })).statusCode, 303, 'two owners')
        await ed.get(url)
        const act = (s: typeof olga, other: string) =>
          how === 'demote' ? s.post(`${url}/members/change`, { person: other, role: 'viewer' }) : s.post(`${url}/members/remove`, { person: other })
        const answers = await Promise.all([act(olga, PEOPLE.editor!.id), act(ed, PEOPLE.owner!.id)])
        const codes = answers.map((r) => r.statusCode).sort()
        if (label === 'SQLite') {
          // better-sqlite3 answers synchronously: the second request may find its author already
          // demoted (403) or removed (404) before it reaches storage; either way one wins
          t.equal(codes[0], 303, `round ${round}: one wins`)
          t.ok([403, 404, 409].includes(codes[1] as number), `round ${round}: the other is refused`)
        } else {
          // both passed the owner check before either wrote: only storage's transaction can refuse one
          t.same(codes, [303, 409], `round ${round}: one wins, the other is refused by the rule`)
          t.match(answers.find((r) => r.statusCode === 409)?.body, 'at least one owner')
        }
        const owners = (await b.storage.listMembers(b.vaultId)).filter((m) => m.role === 'owner')
        t.equal(owners.length, 1, `round ${round}: the vault keeps one owner`)
      }
    })
  }
}

import t from 'tap'
import { build, PEOPLE, session } from './helpers.js'
import { testLogEntry, TEST_NO_LIMIT, writeTestValue } from '../../src/testing/index.js'

// Issue 25 (attacker 2): an editor may store NODE_OPTIONS, LD_PRELOAD… and `envkeep run` would
// hand them to an owner's programs. The review page and the Variables page mark such names
// (one list, shared with the CLI), so the person deciding sees what they let through.

const MARK = /<span class="badge code-var" data-code-var="([A-Z_]+)" title="This variable makes programs run code \([^"]+\)\. envkeep run gives it/g

t.test('the review page marks names that make programs run code, and only those', async (t) => {
  const b = await build(t)
  const id = await b.push('development', { NODE_OPTIONS: '--require ./x.js', LD_PRELOAD: '/tmp/x.so', DB_URL: 'postgres://x' })
  const res = await session(b.app, 'owner').get(`/v/${b.vaultId}/variables/imports/${id}`)
  t.equal(res.statusCode, 200)
  t.same([...res.body.matchAll(MARK)].map((m) => m[1]).sort(), ['LD_PRELOAD', 'NODE_OPTIONS'])
  t.match(res.body, /<code class="name">NODE_OPTIONS<\/code> <span class="badge code-var"/)
  t.notMatch(res.body, /<code class="name">DB_URL<\/code> <span class="badge/)
})

t.test('the Variables page marks them too', async (t) => {
  const b = await build(t)
  for (const v of await b.seal('development', { BASH_ENV: '/tmp/x.sh', PORT: '8080' })) {
    await writeTestValue(
      b.storage,
      { vaultId: b.vaultId, environment: 'development', value: v, by: PEOPLE.owner!.id, now: b.clock.now, limit: TEST_NO_LIMIT },
      testLogEntry({ vaultId: b.vaultId, at: b.clock.now, personId: PEOPLE.owner!.id, action: 'variable_set', environment: 'development', names: [v.name] }),
    )
  }
  const res = await session(b.app, 'owner').get(`/v/${b.vaultId}`)
  t.equal(res.statusCode, 200)
  t.same(
    [...res.body.matchAll(MARK)].map((m) => m[1]),
    ['BASH_ENV'],
  )
})

import { randomBytes, randomUUID } from 'node:crypto'
import t from 'tap'
import { createLocalKeyring } from '@envkeep/env-api-plugin'
import { mintSignIn, testLogEntry } from '@envkeep/env-api-plugin/testing'
import { addAccount, browser, buildTestApp, csrfOf } from './helpers.js'

// Issue 12's "done when", on the self-hosting server: a wrong push applied to production is
// undone in two clicks, every value byte for byte. SQLite here; PostgreSQL in test:postgres.

const PASSWORD = 'canary-history-owner-password'
const GOOD = { DB_URL: 'postgres://app:good@db/app', MULTI: 'a\nb\r\n"c" \'d\' 🔐', BIG: `${'z'.repeat(65_536 - 5)}ünï` }
const WRONG = { DB_URL: 'postgres://app:WRONG@db/app', STRAY: 'canary-history-stray' }

t.test('a wrong push applied to production is undone in two clicks (the server, its pages, its store)', async (t) => {
  const { app, storage, accounts, config, clock } = await buildTestApp(t, { keyring: createLocalKeyring(randomBytes(32)) })
  const ana = await addAccount(accounts, 'ana@example.com', PASSWORD, 'Ana')
  const bo = await addAccount(accounts, 'bo@example.com', PASSWORD, 'Bo')
  const now = new Date(clock.ms)
  const vaultId = randomUUID()
  await storage.createVault(
    { id: vaultId, name: 'shop', ownerId: ana.id, plan: 'self-hosted', environments: [{ name: 'production', ownersOnly: true, secondPerson: false }], now },
    testLogEntry({ vaultId, action: 'vault_created' }),
  )
  // Ana sends, Bo (an owner too) reviews and reverts directly: the owners turned "Require a
  // second person" off (with it on, the revert is proposed: env-api-plugin's second-person.test.ts)
  await storage.changeMember({ kind: 'set', vaultId, personId: bo.id, role: 'owner' }, testLogEntry({ vaultId, action: 'member_added' }))
  const { accessToken } = await mintSignIn(storage, { baseUrl: config.baseUrl, personId: ana.id, now, signInTtlMs: 86_400_000 })
  const headers = { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json' }
  const b = browser(app)
  const login = await b.get('/login')
  t.equal((await b.post('/login', { _csrf: csrfOf(login.body), email: 'bo@example.com', password: PASSWORD, return_to: '/' })).statusCode, 303)

  const pushAndApply = async (variables: Record<string, string>) => {
    const res = await app.inject({ method: 'POST', url: `/api/env/${vaultId}/production/imports`, headers, payload: { variables } })
    t.equal(res.statusCode, 201, res.body)
    const review = `/v/${vaultId}/variables/imports/${res.json().import}`
    const page = await b.get(review)
    t.equal((await b.post(`${review}/apply`, { _csrf: csrfOf(page.body) })).statusCode, 303)
    return review
  }
  const read = async () => (await app.inject({ method: 'GET', url: `/api/env/${vaultId}/production`, headers })).json().variables as Record<string, string>

  await pushAndApply(GOOD)
  const wrong = await pushAndApply(WRONG)
  t.same(await read(), { ...GOOD, ...WRONG })

  const review = await b.get(wrong)
  const change = /href="([^"]+\/changes\/[^"]+)">The change it made/.exec(review.body)?.[1]
  t.ok(change)
  // click one: Revert this change (the confirmation); click two: Revert
  const confirm = await b.get(`${change}/revert`)
  t.match(confirm.body, /Will be written \(1\)<\/h2>\n<p><code class="name">DB_URL<\/code><\/p>/)
  t.match(confirm.body, /Will be deleted \(1\)<\/h2>\n<p><code class="name">STRAY<\/code><\/p>/)
  const version = /name="version" value="(\d+)"/.exec(confirm.body)![1]!
  t.equal((await b.post(`${change}/revert`, { _csrf: csrfOf(confirm.body), version, also: '' })).statusCode, 303)
  const back = await read()
  t.same(back, GOOD)
  for (const [k, v] of Object.entries(GOOD)) t.ok(Buffer.from(back[k]!, 'utf8').equals(Buffer.from(v, 'utf8')), `${k} byte for byte`)
  t.match((await b.get(wrong)).body, /Reverted by <span class="person">Bo<\/span>/)
})

import { randomBytes, randomUUID } from 'node:crypto'
import t from 'tap'
import { createLocalKeyring } from '@envkeep/env-api-plugin'
import { mintSignIn, testLogEntry } from '@envkeep/env-api-plugin/testing'
import { addAccount, browser, buildTestApp, csrfOf } from './helpers.js'

// Issue 24, references: their own kind of variable, resolved at every read with the reader's
// rights. SQLite here; PostgreSQL with ENVKEEP_TEST_STORAGE=postgres (scripts/test-postgres.mjs).

const PASSWORD = 'canary-references-password'
const PROD_URL = 'postgres://app:canary-prod-secret@db/app'

async function setUp(t: Parameters<typeof buildTestApp>[0]) {
  const { app, storage, accounts, config, clock } = await buildTestApp(t, { keyring: createLocalKeyring(randomBytes(32)) })
  const ana = await addAccount(accounts, 'ana@example.com', PASSWORD, 'Ana')
  const ed = await addAccount(accounts, 'ed@example.com', PASSWORD, 'Ed')
  const now = new Date(clock.ms)
  const vaultId = randomUUID()
  await storage.createVault(
    {
      id: vaultId,
      name: 'shop',
      ownerId: ana.id,
      plan: 'self-hosted',
      environments: [
        { name: 'development', ownersOnly: false },
        { name: 'preview', ownersOnly: false },
        // no second person here (they would turn the page's changes into pushes): references are the subject
        { name: 'production', ownersOnly: true, secondPerson: false },
      ],
      now,
    },
    testLogEntry({ vaultId, action: 'vault_created' }),
  )
  await storage.changeMember({ kind: 'set', vaultId, personId: ed.id, role: 'editor' }, testLogEntry({ vaultId, action: 'member_added' }))
  const token = async (personId: string) => (await mintSignIn(storage, { baseUrl: config.baseUrl, personId, now, signInTtlMs: 86_400_000 })).accessToken
  const tokens = { ana: await token(ana.id), ed: await token(ed.id) }
  const read = (who: keyof typeof tokens, env: string) =>
    app.inject({ method: 'GET', url: `/api/env/${vaultId}/${env}`, headers: { authorization: `Bearer ${tokens[who]}` } })
  const signedIn = async (email: string) => {
    const b = browser(app)
    const login = await b.get('/login')
    const res = await b.post('/login', { _csrf: csrfOf(login.body), email, password: PASSWORD, return_to: '/' })
    t.equal(res.statusCode, 303)
    return b
  }
  const a = await signedIn('ana@example.com')
  const e = await signedIn('ed@example.com')
  const form = async (b: ReturnType<typeof browser>, path: string, fields: Record<string, string>) => {
    const page = await b.get(`/v/${vaultId}?env=${fields.environment ?? 'development'}`)
    return b.post(`/v/${vaultId}${path}`, { _csrf: csrfOf(page.body), ...fields })
  }
  return { app, storage, vaultId, ana, ed, tokens, read, a, e, form }
}

t.test('a reference resolves for an owner, is refused as a whole for an editor, logged in both environments', async (t) => {
  const s = await setUp(t)
  t.equal((await s.form(s.a, '/variables/add', { environment: 'production', name: 'DATABASE_URL', value: PROD_URL })).statusCode, 303)
  t.equal((await s.form(s.a, '/variables/add', { environment: 'development', name: 'PLAIN', value: 'dev-only' })).statusCode, 303)
  const made = await s.form(s.a, '/variables/refer', { environment: 'development', name: 'DB_URL', target: 'production.DATABASE_URL' })
  t.equal(made.statusCode, 303, made.body)

  // the page shows the target, not the value, until Reveal
  const page = await s.a.get(`/v/${s.vaultId}?env=development`)
  t.match(page.body, /refers to <code>production\.DATABASE_URL<\/code>/)
  t.notMatch(page.body, /canary-prod-secret/)
  const revealed = await s.a.post(`/v/${s.vaultId}/reveal`, { _csrf: csrfOf(page.body), environment: 'development', name: 'DB_URL' })
  t.match(revealed.body, /canary-prod-secret/)

  // an owner reads the value it leads to, byte for byte; logged in both environments
  const before = (await s.storage.listAccessLog(s.vaultId, { limit: 100 })).length
  const ok = await s.read('ana', 'development')
  t.equal(ok.statusCode, 200)
  t.equal(ok.body, JSON.stringify({ vault: s.vaultId, environment: 'development', variables: { DB_URL: PROD_URL, PLAIN: 'dev-only' } }))
  const logged = (await s.storage.listAccessLog(s.vaultId, { limit: 100 })).slice(0, -before || undefined)
  t.same(logged.map((l) => [l.action, l.environment, l.names]).sort(), [
    ['read', 'development', ['DB_URL', 'PLAIN']],
    ['read', 'production', ['DATABASE_URL']],
  ])

  // an editor may not read production: the whole read is refused, naming the variable and the environment
  const refused = await s.read('ed', 'development')
  t.equal(refused.statusCode, 403)
  const body = refused.json()
  t.equal(body.error, 'forbidden')
  t.match(body.message, /DB_URL refers to production\.DATABASE_URL, in production, and your role \(editor\) cannot read owners-only environments/)
  t.notMatch(refused.body, /canary-prod-secret|dev-only/)
  const refusals = await s.storage.listAccessLog(s.vaultId, { action: 'refused', limit: 10 })
  t.same(refusals.map((l) => [l.environment, l.names, l.personId]).sort(), [
    ['development', ['DB_URL'], s.ed.id],
    ['production', ['DATABASE_URL'], s.ed.id],
  ])
  // and on the page: Reveal all is refused the same way
  const edPage = await s.e.get(`/v/${s.vaultId}?env=development`)
  const edReveal = await s.e.post(`/v/${s.vaultId}/reveal`, { _csrf: csrfOf(edPage.body), environment: 'development' })
  t.equal(edReveal.statusCode, 403)
  t.notMatch(edReveal.body, /canary-prod-secret|dev-only/)

  // an editor may not make a reference to what they may not read
  const edRef = await s.form(s.e, '/variables/refer', { environment: 'preview', name: 'STOLEN', target: 'production.DATABASE_URL' })
  t.equal(edRef.statusCode, 403)
  t.match(edRef.body, /you may refer only to what you may read/)
})

t.test('cycles, dangling targets and too deep chains are refused when written; a deleted target breaks the read with 409', async (t) => {
  const s = await setUp(t)
  await s.form(s.a, '/variables/add', { environment: 'preview', name: 'A', value: 'a-value' })
  t.equal((await s.form(s.a, '/variables/refer', { environment: 'development', name: 'B', target: 'preview.A' })).statusCode, 303)
  const cycle = await s.form(s.a, '/variables/refer', { environment: 'preview', name: 'A', target: 'development.B' })
  t.equal(cycle.statusCode, 409)
  t.match(cycle.body, /a cycle/)
  const dangling = await s.form(s.a, '/variables/refer', { environment: 'development', name: 'C', target: 'preview.NOPE' })
  t.equal(dangling.statusCode, 409)
  t.match(dangling.body, /preview\.NOPE does not exist/)
  const noEnv = await s.form(s.a, '/variables/refer', { environment: 'development', name: 'C', target: 'staging.A' })
  t.equal(noEnv.statusCode, 409)
  const same = await s.form(s.a, '/variables/refer', { environment: 'development', name: 'C', target: 'development.B' })
  t.equal(same.statusCode, 400)
  t.same((await s.read('ana', 'preview')).json().variables, { A: 'a-value' }, 'nothing written by the refusals')

  // references to references are followed (here 2 deep)
  t.equal((await s.form(s.a, '/variables/refer', { environment: 'production', name: 'P', target: 'development.B' })).statusCode, 303)
  t.same((await s.read('ana', 'production')).json().variables, { P: 'a-value' })

  // a deleted target: shown as broken, the read fails with 409 naming it
  t.equal((await s.form(s.a, '/variables/delete', { environment: 'preview', name: 'A' })).statusCode, 303)
  const page = await s.a.get(`/v/${s.vaultId}?env=development`)
  t.match(page.body, /broken reference<\/span> to <code>preview\.A<\/code>/)
  const broken = await s.read('ana', 'development')
  t.equal(broken.statusCode, 409)
  t.equal(broken.json().error, 'conflict')
  t.match(broken.json().message, /B refers to preview\.A, which does not exist: the reference is broken/)
})

t.test('a pushed ${X} is literal text, and history keeps a reference as a reference', async (t) => {
  const s = await setUp(t)
  const literal = { LIT: '${DATABASE_URL}', DOTTED: 'production.DATABASE_URL', MIX: 'x ${A:-b} $B' }
  const res = await s.app.inject({
    method: 'POST',
    url: `/api/env/${s.vaultId}/development/imports`,
    headers: { authorization: `Bearer ${s.tokens.ana}`, 'content-type': 'application/json' },
    payload: { variables: literal },
  })
  t.equal(res.statusCode, 201, res.body)
  const review = `/v/${s.vaultId}/variables/imports/${res.json().import}`
  const page = await s.a.get(review)
  t.equal((await s.a.post(`${review}/apply`, { _csrf: csrfOf(page.body) })).statusCode, 303)
  const read = await s.read('ana', 'development')
  t.equal(
    read.body,
    JSON.stringify({ vault: s.vaultId, environment: 'development', variables: { DOTTED: literal.DOTTED, LIT: literal.LIT, MIX: literal.MIX } }),
  )
  t.notMatch((await s.a.get(`/v/${s.vaultId}?env=development`)).body, /refers to/)

  // a value may not hold NUL (a reference's stored form begins with one; no program can receive it)
  const nul = await s.app.inject({
    method: 'POST',
    url: `/api/env/${s.vaultId}/development/imports`,
    headers: { authorization: `Bearer ${s.tokens.ana}`, 'content-type': 'application/json' },
    payload: { variables: { X: '\u0000preview.A' } },
  })
  t.equal(nul.statusCode, 400)

  await s.form(s.a, '/variables/add', { environment: 'preview', name: 'A', value: 'canary-a-value' })
  t.equal((await s.form(s.a, '/variables/refer', { environment: 'development', name: 'LIT', target: 'preview.A' })).statusCode, 303)
  const history = await s.a.get(`/v/${s.vaultId}/history/development`)
  const change = new RegExp(`href="(/v/${s.vaultId}/changes/[^"]+)"`).exec(history.body)?.[1]
  t.ok(change, 'the change is listed')
  const shown = await s.a.get(change!)
  const opened = await s.a.post(`${change}/reveal`, { _csrf: csrfOf(shown.body) })
  t.match(opened.body, /reference to <code>preview\.A<\/code>/)
  t.notMatch(opened.body, /canary-a-value/)
})

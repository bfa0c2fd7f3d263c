import { randomBytes, randomUUID } from 'node:crypto'
import t from 'tap'
import { createLocalKeyring, rotateDataKey } from '@envkeep/env-api-plugin'
import { mintSignIn, testLogEntry } from '@envkeep/env-api-plugin/testing'
import { addAccount, browser, buildTestApp, csrfOf } from './helpers.js'

// Issue 24, personal overrides: used for their person's reads only, never another member's or
// a CI identity's. SQLite here; PostgreSQL with ENVKEEP_TEST_STORAGE=postgres.

const PASSWORD = 'canary-overrides-password'
const SHARED = 'postgres://shared@db/app'
const MINE = 'postgres://ana-laptop@localhost/app ✓\nline two'

t.test('an override is seen by its person only: not another member, not a CI identity; owners see who, never what', async (t) => {
  const keyring = createLocalKeyring(randomBytes(32))
  const { app, storage, accounts, config, clock } = await buildTestApp(t, { keyring })
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
        { name: 'production', ownersOnly: true },
      ],
      now,
    },
    testLogEntry({ vaultId, action: 'vault_created' }),
  )
  await storage.changeMember({ kind: 'set', vaultId, personId: ed.id, role: 'editor' }, testLogEntry({ vaultId, action: 'member_added' }))
  const ci = await storage.changeCiIdentity(
    {
      kind: 'create',
      identity: {
        id: randomUUID(),
        vaultId,
        name: 'deploy',
        issuer: 'https://issuer.example',
        audience: 'envkeep',
        subjectPattern: '*',
        requiredClaims: {},
        role: 'owner',
        environments: null,
        now,
      },
    },
    testLogEntry({ vaultId, action: 'member_added' }),
  )
  t.ok(ci.ok)
  const mint = async (personId: string, scopes?: string[]) =>
    (await mintSignIn(storage, { baseUrl: config.baseUrl, personId, now, signInTtlMs: 86_400_000, ...(scopes ? { scopes } : {}) })).accessToken
  const tokens = { ana: await mint(ana.id), ed: await mint(ed.id), ci: await mint(`ci:${ci.ok ? ci.value.id : ''}`, ['env:read']) }
  const read = (who: keyof typeof tokens, env = 'development') =>
    app.inject({ method: 'GET', url: `/api/env/${vaultId}/${env}`, headers: { authorization: `Bearer ${tokens[who]}` } })
  const putOverride = (who: keyof typeof tokens, name: string, value: string, env = 'development') =>
    app.inject({
      method: 'PUT',
      url: `/api/env/${vaultId}/${env}/overrides/${name}`,
      headers: { authorization: `Bearer ${tokens[who]}`, 'content-type': 'application/json' },
      payload: { value },
    })
  const signedIn = async (email: string) => {
    const b = browser(app)
    const login = await b.get('/login')
    t.equal((await b.post('/login', { _csrf: csrfOf(login.body), email, password: PASSWORD, return_to: '/' })).statusCode, 303)
    return b
  }
  const a = await signedIn('ana@example.com')
  const e = await signedIn('ed@example.com')
  const vaultPage = (b: ReturnType<typeof browser>, env = 'development') => b.get(`/v/${vaultId}?env=${env}`)
  const post = async (b: ReturnType<typeof browser>, path: string, fields: Record<string, string>) =>
    b.post(`/v/${vaultId}${path}`, { _csrf: csrfOf((await vaultPage(b, fields.environment)).body), ...fields })

  t.equal((await post(a, '/variables/add', { environment: 'development', name: 'DB_URL', value: SHARED })).statusCode, 303)
  t.equal((await post(a, '/variables/add', { environment: 'development', name: 'PORT', value: '8080' })).statusCode, 303)

  // not allowed yet: refused, nothing stored
  const early = await putOverride('ana', 'DB_URL', MINE)
  t.equal(early.statusCode, 409, early.body)
  t.notMatch((await vaultPage(a)).body, /Override for me/)

  // Settings: "Allow personal overrides", never offered on an owners-only environment
  const settings = await a.get(`/v/${vaultId}/settings`)
  t.equal((settings.body.match(/Allow personal overrides<\/button>/g) ?? []).length, 1, 'offered for development only')
  t.equal(
    (await a.post(`/v/${vaultId}/settings/overrides`, { _csrf: csrfOf(settings.body), environment: 'production', allow: 'on' })).statusCode,
    400,
    'refused for an owners-only environment',
  )
  t.equal((await a.post(`/v/${vaultId}/settings/overrides`, { _csrf: csrfOf(settings.body), environment: 'development', allow: 'on' })).statusCode, 303)
  t.equal((await putOverride('ana', 'DB_URL', 'x', 'production')).statusCode, 409, 'never on an owners-only environment')

  // Ana: "Override for me" on the page; Ed through the API
  const made = await post(a, '/variables/override', { environment: 'development', name: 'DB_URL', value: MINE.replace('\n', '\r\n') })
  t.equal(made.statusCode, 303, made.body)
  t.equal((await putOverride('ed', 'PORT', '9999')).statusCode, 200)
  t.equal((await putOverride('ed', 'NOPE', '1')).statusCode, 404, 'only a variable the environment has')
  t.equal((await putOverride('ci', 'PORT', '1')).statusCode, 403, 'a CI sign-in cannot (it may not push)')

  const anaRead = await read('ana')
  t.equal(anaRead.statusCode, 200)
  t.equal(anaRead.body, JSON.stringify({ vault: vaultId, environment: 'development', variables: { DB_URL: MINE, PORT: '8080' } }), 'byte for byte')
  t.equal(anaRead.headers['envkeep-personal-overrides'], 'DB_URL')
  const edRead = await read('ed')
  t.same(edRead.json().variables, { DB_URL: SHARED, PORT: '9999' })
  t.equal(edRead.headers['envkeep-personal-overrides'], 'PORT')
  const ciRead = await read('ci')
  t.same(ciRead.json().variables, { DB_URL: SHARED, PORT: '8080' }, 'a CI identity never gets an override')
  t.equal(ciRead.headers['envkeep-personal-overrides'], undefined)

  // the page: Ana's mark; owners see who overrides what, never the value; Ed sees only his own
  const anaPage = (await vaultPage(a)).body
  t.match(anaPage, /data-overridden="DB_URL"/)
  t.match(anaPage, /data-overrides="PORT">personal overrides: <span class="person">Ed<\/span>/)
  t.notMatch(anaPage, /ana-laptop|9999/)
  const edPage = (await vaultPage(e)).body
  t.match(edPage, /data-overridden="PORT"/)
  t.notMatch(edPage, /data-overrides=|data-overridden="DB_URL"/)
  // Reveal shows the person's own value
  const revealed = await e.post(`/v/${vaultId}/reveal`, { _csrf: csrfOf(edPage), environment: 'development' })
  t.match(revealed.body, /data-name="PORT">9999</)

  // the log names the variable, never the value
  const logged = await storage.listAccessLog(vaultId, { action: 'override_set', limit: 10 })
  t.same(logged.map((l) => l.names).sort(), [['DB_URL'], ['PORT']])

  // a data-key rotation keeps it readable; removing it gives the shared value back
  t.equal(await rotateDataKey(storage, keyring, vaultId), true)
  t.same((await read('ana')).json().variables.DB_URL, MINE)
  t.equal((await post(a, '/variables/override/remove', { environment: 'development', name: 'DB_URL' })).statusCode, 303)
  t.same((await read('ana')).json().variables.DB_URL, SHARED)
  t.equal((await read('ana')).headers['envkeep-personal-overrides'], undefined)

  // made owners-only: every override goes, and stays gone
  const s2 = await a.get(`/v/${vaultId}/settings`)
  t.equal(
    (await a.post(`/v/${vaultId}/settings/environment`, { _csrf: csrfOf(s2.body), environment: 'development', owners_only: 'on', second_person: 'on' }))
      .statusCode,
    303,
  )
  t.same((await storage.readOverrides(vaultId, 'development')).overrides, [])
  t.same((await read('ana')).json().variables, { DB_URL: SHARED, PORT: '8080' })
})

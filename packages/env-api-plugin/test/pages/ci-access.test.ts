import t from 'tap'
import { build, PEOPLE, session } from './helpers.js'
import { testLogEntry } from '../../src/testing/index.js'

const GH = 'https://token.actions.githubusercontent.com'

t.test('an owner adds, sees and removes a CI identity on "CI access"; each is logged', async (t) => {
  const b = await build(t)
  const s = session(b.app, 'owner')
  const url = `/v/${b.vaultId}/ci`
  const vaultPage = await s.get(`/v/${b.vaultId}/members`)
  t.match(vaultPage.body, `href="${url}"`, 'the vault page links to CI access')
  const page = await s.get(url)
  t.equal(page.statusCode, 200)
  for (const label of ['CI access', 'No CI identity yet.', 'Add a CI identity', 'Subject pattern', 'Reads as', 'Add CI identity']) t.match(page.body, label)

  const add = await s.post(`${url}/add`, {
    name: 'deploy',
    issuer: GH,
    audience: 'http://127.0.0.1',
    subject: 'repo:acme/shop:ref:refs/heads/main',
    claims: 'environment=production\nref=refs/heads/main',
    role: 'owner',
    environments: 'production',
  })
  t.equal(add.statusCode, 303, add.body.slice(0, 300))
  t.equal(add.headers.location, `${url}?done=added`)
  const [identity] = await b.storage.findCiIdentities({ vaultId: b.vaultId })
  t.same(
    identity && { ...identity, requiredClaims: { ...identity.requiredClaims }, environments: identity.environments && [...identity.environments] },
    identity && {
      ...identity,
      name: 'deploy',
      issuer: GH,
      subjectPattern: 'repo:acme/shop:ref:refs/heads/main',
      requiredClaims: { environment: 'production', ref: 'refs/heads/main' },
      role: 'owner',
      environments: ['production'],
    },
  )
  const listed = await s.get(`${url}?done=added`)
  t.match(listed.body, 'The CI identity was added.')
  t.match(listed.body, 'repo:acme/shop:ref:refs/heads/main')
  const [log] = await b.storage.listAccessLog(b.vaultId, { limit: 1 })
  t.same([log?.action, log?.personId, log?.subject], ['member_added', PEOPLE.owner!.id, `ci:${identity!.id}`])

  const dup = await s.post(`${url}/add`, { name: 'DEPLOY', issuer: GH, audience: 'a', subject: 'repo:x/y:*', role: 'editor' })
  t.equal(dup.statusCode, 409, 'a second identity of the same name is refused')
  t.match(dup.body, 'has a CI identity by that name already')

  const remove = await s.post(`${url}/remove`, { identity: identity!.id })
  t.equal(remove.statusCode, 303)
  t.same(await b.storage.findCiIdentities({ vaultId: b.vaultId }), [])
})

t.test('refused CI identities: bad issuer, everything-pattern, role, owners-only environment for an editor; nothing stored, nothing echoed', async (t) => {
  const b = await build(t)
  const s = session(b.app, 'owner')
  const url = `/v/${b.vaultId}/ci`
  await s.get(url)
  const base = { name: 'x', issuer: GH, audience: 'aud', subject: 'repo:acme/shop:*', role: 'editor' }
  const rows: [string, Record<string, string>, RegExp][] = [
    ['plain http issuer', { issuer: 'http://issuer.example' }, /must be https/],
    ['loopback http issuer without the test allowance', { issuer: 'http://127.0.0.1:9999' }, /must be https/],
    ['a pattern that matches every subject', { subject: '*' }, /must not match every subject/],
    ['a pattern whose repository is a wildcard', { subject: 'repo:acme/*' }, /write out the repository or project/],
    ['a pattern that starts with a wildcard', { subject: '*:environment:production' }, /write out the repository or project/],
    ['viewer role', { role: 'viewer' }, /editor or owner/],
    ['an editor limited to an owners-only environment', { environments: 'production' }, /cannot read owners-only/],
    ['an environment the vault does not have', { environments: 'staging' }, /does not exist/],
    ['a reserved claim', { claims: 'sub=repo:evil/x' }, /required claim/],
  ]
  for (const [name, over, why] of rows) {
    const res = await s.post(`${url}/add`, { ...base, ...over })
    t.equal(res.statusCode, 400, name)
    t.match(res.body, why, `${name}: says why`)
  }
  t.same(await b.storage.findCiIdentities({ vaultId: b.vaultId }), [], 'nothing stored')
})

t.test('only owners reach CI access; forms need the CSRF token', async (t) => {
  const b = await build(t)
  const url = `/v/${b.vaultId}/ci`
  for (const who of ['editor', 'viewer']) {
    const s = session(b.app, who)
    const page = await s.get(url)
    t.equal(page.statusCode, 403, `${who}: 403`)
    await s.get(`/v/${b.vaultId}`)
    const add = await s.post(`${url}/add`, { name: 'x', issuer: GH, audience: 'a', subject: 'repo:acme/shop:*', role: 'owner' })
    t.equal(add.statusCode, 403, `${who} cannot add`)
  }
  const owner = session(b.app, 'owner')
  await owner.get(url)
  const noCsrf = await owner.post(`${url}/add`, { name: 'x', issuer: GH, audience: 'a', subject: 'repo:acme/shop:*', role: 'owner' }, { csrf: false })
  t.equal(noCsrf.statusCode, 403, 'no CSRF token: refused')
  t.same(await b.storage.findCiIdentities({ vaultId: b.vaultId }), [])
  const anon = session(b.app, null)
  t.equal((await anon.get(url)).statusCode, 303, 'signed out: to the sign-in page')
})

t.test('a CI read in the access log names the CI identity, the JWT sub and the run, also when the entry has names', async (t) => {
  const b = await build(t)
  const s = session(b.app, 'owner')
  const detail = 'deploy: sub=repo:acme/shop:ref:refs/heads/main run_id=1234'
  for (const names of [['API_KEY', 'DB_URL'], []]) {
    await b.storage.appendAccessLog(
      testLogEntry({
        vaultId: b.vaultId,
        action: 'read',
        personId: 'ci:0b9a3c2e-0000-4000-8000-000000000001',
        clientId: 'cli',
        environment: 'development',
        names,
        detail,
      }),
    )
    const page = await s.get(`/v/${b.vaultId}/access-log`)
    t.equal(page.statusCode, 200)
    const row = /<tbody>[\s\S]*?<\/tr>/.exec(page.body)?.[0] ?? ''
    t.match(row, 'CI identity', `${names.length} names: the reader is a CI identity, not an unknown person`)
    t.notMatch(row, 'unknown person')
    t.match(row, 'deploy: sub=repo:acme/shop:ref:refs/heads/main run_id=1234', `${names.length} names: the identity, sub and run`)
    if (names.length) t.match(row, 'API_KEY, DB_URL', 'and the names read')
  }
})

t.test('CI identities end when the owner who added them loses the owner role or leaves; the others stay', async (t) => {
  const b = await build(t)
  const owner = session(b.app, 'owner')
  const editor = session(b.app, 'editor')
  const url = `/v/${b.vaultId}/ci`
  const add = async (s: ReturnType<typeof session>, name: string) => {
    await s.get(url)
    const r = await s.post(`${url}/add`, { name, issuer: GH, audience: 'aud', subject: `repo:acme/${name}:*`, role: 'editor' })
    t.equal(r.statusCode, 303, `${name} added`)
  }
  const names = async () => (await b.storage.findCiIdentities({ vaultId: b.vaultId })).map((i) => i.name).sort()
  await owner.get(`/v/${b.vaultId}/members`)
  const promote = (who: string, role: string) => owner.post(`/v/${b.vaultId}/members/change`, { person: PEOPLE[who]!.id, role })
  t.equal((await promote('editor', 'owner')).statusCode, 303, 'the editor becomes an owner')
  await add(owner, 'kept')
  await add(editor, 'by-editor')
  await add(editor, 'by-editor-2')
  t.same(await names(), ['by-editor', 'by-editor-2', 'kept'])

  t.equal((await promote('editor', 'editor')).statusCode, 303, 'the owner role is taken back')
  t.same(await names(), ['kept'], 'the identities that person added are ended; the others stay')
  const entries = await b.storage.listAccessLog(b.vaultId, { action: 'member_removed', limit: 10 })
  t.equal(entries.filter((e) => e.subject?.startsWith('ci:') && /no longer an owner/.test(e.detail ?? '')).length, 2, 'each ending is logged, saying why')

  // leaving: promote again, add, then remove the person
  t.equal((await promote('editor', 'owner')).statusCode, 303)
  await add(editor, 'before-leaving')
  t.equal((await owner.post(`/v/${b.vaultId}/members/remove`, { person: PEOPLE.editor!.id })).statusCode, 303)
  t.same(await names(), ['kept'], 'removing the person ends theirs too')
})

t.test('an identity added before the subject rule, whose pattern claims subjects by wildcard alone, is flagged on CI access', async (t) => {
  const b = await build(t)
  const s = session(b.app, 'owner')
  const id = '0b9a3c2e-0000-4000-8000-0000000000aa'
  await b.storage.changeCiIdentity(
    {
      kind: 'create',
      identity: {
        id,
        vaultId: b.vaultId,
        name: 'old-broad',
        issuer: GH,
        audience: 'aud',
        subjectPattern: 'repo:acme/*',
        requiredClaims: {},
        role: 'editor',
        environments: null,
        now: new Date(),
      },
    },
    testLogEntry({ vaultId: b.vaultId, action: 'member_added', subject: `ci:${id}`, detail: 'editor' }),
  )
  const page = await s.get(`/v/${b.vaultId}/ci`)
  t.match(page.body, /This pattern is no longer accepted/)
})

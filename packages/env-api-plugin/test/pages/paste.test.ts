import t from 'tap'
import { stagedValues } from '@envkeep/env-api-plugin/testing'
import { parseDotenv } from '@envkeep/dotenv'
import { createVaultCrypto } from '../../src/vault-service.js'
import { storageUnderTest } from '../storage-under-test.js'
import { build, PEOPLE, session } from './helpers.js'

// Issue 14, item 3: "Paste a .env". The text is read with the CLI's grammar (@envkeep/dotenv)
// and becomes a pending push through the domain layer; refusals render on the same page with
// the text kept, refused lines by line, name and reason, never a value.

const CANARY = 'canary-pasted-7f3e'

/** What a browser sends: the textarea's line ends as CRLF. */
const FILE = [
  '# from the team wiki',
  `API_URL=https://${CANARY}.example`,
  'KEY="multi',
  'line"',
  `bad-name=${CANARY}-bad`,
  'EMPTY=',
  'DUP=first',
  'DUP=second',
].join('\r\n')

type B = Awaited<ReturnType<typeof build>>

async function pushes(b: B) {
  return b.storage.listImports(b.vaultId, { limit: 10 })
}

/** The page's refused-lines section (where no value may appear). */
function refusedSection(body: string): string {
  const at = body.indexOf('<section aria-labelledby="refused-title">')
  return at === -1 ? '' : body.slice(at, body.indexOf('</section>', at))
}

/** The textarea's content as the browser shows it (the first newline after the tag is dropped by HTML). */
function textareaOf(body: string): string | null {
  const m = /<textarea[^>]*>\n([\s\S]*?)<\/textarea>/.exec(body)
  return m
    ? m[1]!
        .replace(/&#39;/g, "'")
        .replace(/&quot;/g, '"')
        .replace(/&lt;/g, '<')
        .replace(/&gt;/g, '>')
        .replace(/&amp;/g, '&')
    : null
}

t.test('the form: environments the person may push to, the label, sign-in first', async (t) => {
  const b = await build(t, { storage: await storageUnderTest(t) })
  const url = `/v/${b.vaultId}/paste`
  const owner = await session(b.app, 'owner').get(url)
  t.equal(owner.statusCode, 200)
  t.match(owner.headers['content-security-policy'], /script-src 'self'/)
  t.match(owner.body, '<h1>Paste a .env</h1>')
  t.match(owner.body, '>Review as a push</button>')
  t.match(owner.body, '<label for="paste-text">Contents of the .env file</label>')
  t.match(owner.body, 'name="_csrf"')
  t.same(
    [...owner.body.matchAll(/<option value="([^"]+)"/g)].map((m) => m[1]),
    ['development', 'preview', 'production'],
  )
  t.match(owner.body, /<option value="development" selected>/, 'a shared environment is chosen first')
  t.match((await session(b.app, 'owner').get(`${url}?environment=production`)).body, /<option value="production" selected>/)

  const editor = await session(b.app, 'editor').get(url)
  t.same(
    [...editor.body.matchAll(/<option value="([^"]+)"/g)].map((m) => m[1]),
    ['development', 'preview'],
    'an editor is not offered production',
  )
  const viewer = await session(b.app, 'viewer').get(url)
  t.equal(viewer.statusCode, 200)
  t.match(viewer.body, 'Your role (viewer) cannot push to any environment of this vault.')
  t.notMatch(viewer.body, '<textarea')
  t.equal((await session(b.app, 'outsider').get(url)).statusCode, 404, 'not shared: not found')
  const anonymous = await session(b.app, null).get(url)
  t.equal(anonymous.statusCode, 303)
  t.equal(anonymous.headers.location, `/login?return_to=${encodeURIComponent(url)}`)
})

t.test('a pasted file becomes a pending push by this person, read as the CLI reads it, CRLF as LF', async (t) => {
  const b = await build(t, { storage: await storageUnderTest(t) })
  const editor = session(b.app, 'editor')
  await editor.get(`/v/${b.vaultId}/paste`)
  const r = await editor.post(`/v/${b.vaultId}/paste`, { environment: 'development', text: FILE })
  t.equal(r.statusCode, 303, r.body)
  const [push, ...more] = await pushes(b)
  t.same(more, [], 'one push')
  t.equal(r.headers.location, `/v/${b.vaultId}/variables/imports/${push!.id}`, 'to its review page')
  t.equal(push!.status, 'pending')
  t.equal(push!.environment, 'development')
  t.equal(push!.senderId, PEOPLE.editor!.id, "the page's person sends it")
  t.same([...push!.names].sort(), ['API_URL', 'DUP', 'KEY'])
  const lf = FILE.replace(/\r\n/g, '\n')
  t.same(push!.refused, parseDotenv(lf).refused, 'the refused lines are those of the shared parser')
  t.same(
    push!.refused.map((x) => [x.line, x.name]),
    [
      [5, 'bad-name'],
      [6, 'EMPTY'],
      [7, 'DUP'],
    ],
  )
  t.notMatch(JSON.stringify(push!.refused), CANARY, 'no value in a refusal')
  const staged = await createVaultCrypto(b.storage, b.keyring).openValues(b.vaultId, 'development', await stagedValues(b.storage, push!.id))
  t.same(staged, { API_URL: `https://${CANARY}.example`, KEY: 'multi\nline', DUP: 'second' }, 'a multi-line value is stored with \\n')
  const [entry] = await b.storage.listAccessLog(b.vaultId, { limit: 1 })
  t.same([entry?.action, entry?.personId, entry?.environment], ['push_created', PEOPLE.editor!.id, 'development'])
  t.same(await b.current('development'), {}, 'nothing written before a review')

  const review = await editor.get(r.headers.location as string)
  t.equal(review.statusCode, 200)
  t.match(review.body, '<h1>Review a push</h1>')
  t.match(review.body, 'duplicate of line 8, which was sent')
  t.notMatch(b.logs.join('\n'), CANARY, 'no value in the log')
})

t.test('refusals render on the same page with the text kept; nothing is pushed', async (t) => {
  const b = await build(t, { storage: await storageUnderTest(t), plans: { 'self-hosted': { maxVariables: 2, maxBytes: 1_000_000 } } })
  const url = `/v/${b.vaultId}/paste`
  const cases: Array<{ who: string; environment: string; text: string; status: number; why: RegExp; refused?: number[] }> = [
    { who: 'owner', environment: 'development', text: '', status: 400, why: /the file is empty/ },
    { who: 'owner', environment: 'development', text: '  \r\n\r\n ', status: 400, why: /the file is empty/ },
    {
      who: 'owner',
      environment: 'development',
      text: `# only bad lines\r\nbad-name=${CANARY}\r\nENVKEEP_TOKEN=${CANARY}\r\n${CANARY} garbage\r\nEMPTY=`,
      status: 400,
      why: /no line of the file can be sent \(4 refused, listed below\)/,
      refused: [2, 3, 4, 5],
    },
    {
      who: 'owner',
      environment: 'development',
      text: `A=${CANARY}\r\nB=2\r\nC=3\r\nbad-name=x`,
      status: 403,
      why: /storage limit of 2 variables/,
      refused: [4],
    },
    { who: 'owner', environment: 'development', text: `A=${'x'.repeat(1_048_577)}`, status: 413, why: /the file is 1,048,579 bytes; at most 1,048,576/ },
    { who: 'editor', environment: 'production', text: `A=${CANARY}`, status: 403, why: /your role \(editor\) cannot push to/ },
    { who: 'viewer', environment: 'development', text: `A=${CANARY}`, status: 403, why: /your role \(viewer\) cannot push to/ },
    { who: 'owner', environment: 'staging', text: `A=${CANARY}`, status: 404, why: /./ },
    { who: 'owner', environment: '', text: `A=${CANARY}`, status: 400, why: /choose an environment/ },
  ]
  for (const c of cases) {
    const s = session(b.app, c.who)
    await s.get('/') // a CSRF token (the viewer's paste page has no form)
    const r = await s.post(url, { environment: c.environment, text: c.text })
    const label = `${c.who}, ${c.environment || '(none)'}, ${c.why}`
    t.equal(r.statusCode, c.status, label)
    t.match(r.body, '<h1>Paste a .env</h1>', `${label}: the same page`)
    t.match(r.body, 'That did not work', `${label}: the refusal on top`)
    t.match(r.body, c.why, label)
    if (c.text.length < 10_000) t.equal(textareaOf(r.body), c.text.replace(/\r\n/g, '\n'), `${label}: the text is kept`)
    else t.equal(textareaOf(r.body)?.length, c.text.length, `${label}: the text is kept`)
    const section = refusedSection(r.body)
    t.same(
      [...section.matchAll(/<td data-label="Line">(\d+)<\/td>/g)].map((m) => Number(m[1])),
      c.refused ?? [],
      `${label}: refused lines listed`,
    )
    t.notMatch(section, CANARY, `${label}: no value among the refused lines`)
  }
  t.same(await pushes(b), [], 'no push was created')
  t.notMatch(b.logs.join('\n'), CANARY, 'no value in the log')
})

t.test('without the CSRF token nothing is pushed', async (t) => {
  const b = await build(t, { storage: await storageUnderTest(t) })
  const owner = session(b.app, 'owner')
  await owner.get(`/v/${b.vaultId}/paste`)
  const r = await owner.post(`/v/${b.vaultId}/paste`, { environment: 'development', text: `A=${CANARY}` }, { csrf: false })
  t.equal(r.statusCode, 403)
  t.same(await pushes(b), [])
})

t.test('the refused lines sent with a push are capped as the CLI caps them', async (t) => {
  const b = await build(t, { storage: await storageUnderTest(t) })
  const owner = session(b.app, 'owner')
  await owner.get(`/v/${b.vaultId}/paste`)
  const text = ['GOOD=1', ...Array.from({ length: 1005 }, (_, i) => `bad-${i}=x`)].join('\n')
  t.equal((await owner.post(`/v/${b.vaultId}/paste`, { environment: 'preview', text })).statusCode, 303)
  const [push] = await pushes(b)
  t.equal(push?.refused.length, 1000)
  t.same(push?.refused[0], { line: 2, name: 'bad-0', reason: 'bad name: use letters, digits and underscores, not starting with a digit' })
})

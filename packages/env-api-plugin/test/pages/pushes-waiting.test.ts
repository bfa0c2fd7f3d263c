import { randomUUID } from 'node:crypto'
import t from 'tap'
import { DEFAULT_ENVIRONMENTS } from '../../src/pages/vaults.js'
import { WAITING_VAULTS } from '../../src/domain/index.js'
import { createMemoryStorage, testLogEntry } from '../../src/testing/index.js'
import { build, PEOPLE, session, TTL, type Built } from './helpers.js'

/** The storage of `build`, with its listImports calls counted by vault. */
function countedStorage() {
  const storage = createMemoryStorage()
  const calls: string[] = []
  const listImports = storage.listImports.bind(storage)
  storage.listImports = (vaultId, filter) => {
    calls.push(vaultId)
    return listImports(vaultId, filter)
  }
  return { storage, calls }
}

async function addVault(b: Built, name: string, ownerId: string): Promise<string> {
  const id = randomUUID()
  await b.storage.createVault(
    { id, name, ownerId, plan: 'self-hosted', environments: DEFAULT_ENVIRONMENTS, now: b.clock.now },
    testLogEntry({ vaultId: id, action: 'vault_created' }),
  )
  return id
}

/** The vault list's row of a vault, by its link. */
function rowOf(body: string, vaultId: string): string {
  const m = new RegExp(`<li><a href="/v/${vaultId}">[\\s\\S]*?</li>`).exec(body)
  return m ? m[0] : ''
}

const TOP_BAR = /<header class="top">[\s\S]*?<\/header>/

t.test('no pending push: no badge in the list, none in the top bar', async (t) => {
  const b = await build(t)
  const res = await session(b.app, 'owner').get('/')
  t.equal(res.statusCode, 200)
  t.ok(rowOf(res.body, b.vaultId), 'the vault is listed')
  t.notMatch(res.body, /waiting/)
})

t.test('each person sees the pushes they may decide: per vault in the list, the total in the top bar of every page', async (t) => {
  const { storage, calls } = countedStorage()
  const b = await build(t, { storage })
  // development and preview need no second person; production is owners-only with a second person
  await b.push('development', { A: 'canary-waiting-a' }, [], PEOPLE.editor!.id)
  await b.push('preview', { B: 'canary-waiting-b' }, [], PEOPLE.owner!.id)
  await b.push('production', { C: 'canary-waiting-c' }, [], PEOPLE.owner!.id) // the owner's own: waits for another owner
  await b.push('production', { D: 'canary-waiting-d' }, [], PEOPLE.editor!.id)
  const other = await addVault(b, 'Other', PEOPLE.owner!.id)
  const quiet = await addVault(b, 'Quiet', PEOPLE.owner!.id)
  const otherPush = await b.storage.createImport(
    {
      id: randomUUID(),
      vaultId: other,
      environment: 'development',
      senderId: PEOPLE.owner!.id,
      signInId: null,
      values: [],
      refused: [],
      createdAt: b.clock.now,
      expiresAt: new Date(b.clock.now.getTime() + TTL),
      limit: { maxVariables: 10_000, maxBytes: 1 << 20 },
    },
    testLogEntry({ vaultId: other, action: 'push_created', environment: 'development', names: [] }),
  )
  t.ok(otherPush.ok)

  const owner = session(b.app, 'owner')
  const list = await owner.get('/')
  t.match(
    rowOf(list.body, b.vaultId),
    `<a class="badge waiting-count" href="/v/${encodeURIComponent(b.vaultId)}/pushes">3 pushes waiting</a>`,
    'A, B and D; not C, the own push that needs a second person',
  )
  t.match(rowOf(list.body, other), `<a class="badge waiting-count" href="/v/${other}/pushes">1 push waiting</a>`, "singular, linking to that vault's Pushes")
  t.notMatch(rowOf(list.body, quiet), /waiting/, 'no badge where nothing waits')
  t.match(TOP_BAR.exec(list.body)?.[0], '<a class="waiting" href="/">4 pushes waiting</a>', 'the total, linking to the vault list')

  const editor = session(b.app, 'editor')
  const editorList = await editor.get('/')
  t.match(rowOf(editorList.body, b.vaultId), '2 pushes waiting', 'the editor: A and B, not the owners-only ones')
  t.match(TOP_BAR.exec(editorList.body)?.[0], '>2 pushes waiting</a>')

  calls.length = 0
  const viewerList = await session(b.app, 'viewer').get('/')
  t.equal(viewerList.statusCode, 200)
  t.notMatch(viewerList.body, /waiting/, 'a viewer decides nothing and is told nothing')
  t.same(calls, [], "a viewer's vaults cost no query")

  // the top bar says it on the other pages too
  for (const url of ['/sign-ins', `/v/${b.vaultId}`, `/v/${b.vaultId}/settings`]) {
    const page = await owner.get(url)
    t.equal(page.statusCode, 200, url)
    t.match(TOP_BAR.exec(page.body)?.[0], '<a class="waiting" href="/">4 pushes waiting</a>', url)
  }
  for (const canary of ['canary-waiting-a', 'canary-waiting-b', 'canary-waiting-c', 'canary-waiting-d']) {
    t.notOk(list.body.includes(canary), 'no value on the list')
    t.notOk(b.logs.join('\n').includes(canary), 'no value in the log')
  }
})

t.test('a decided push and one past its expiry are no longer counted', async (t) => {
  const b = await build(t)
  const first = await b.push('development', { A: 'canary-1' })
  await b.push('development', { B: 'canary-2' })
  const owner = session(b.app, 'owner')
  t.match((await owner.get('/')).body, '>2 pushes waiting</a>')

  await owner.get(`/v/${b.vaultId}/variables/imports/${first}`)
  t.equal((await owner.post(`/v/${b.vaultId}/variables/imports/${first}/reject`, { reason: 'not now' })).statusCode, 303)
  t.match((await owner.get('/')).body, '>1 push waiting</a>', 'the rejected push is gone from the count')

  b.clock.now = new Date(b.clock.now.getTime() + TTL) // exactly at expiresAt: expired
  const after = await owner.get('/')
  t.notMatch(after.body, /waiting/, 'a push past its expiry is not waiting')
})

t.test(`past ${WAITING_VAULTS} vaults the count stops and says "at least"; one query per vault counted`, async (t) => {
  const { storage, calls } = countedStorage()
  const b = await build(t, { storage })
  // the built vault has no push; WAITING_VAULTS more with one each
  for (let i = 0; i < WAITING_VAULTS; i++) {
    const id = await addVault(b, `Shop ${i}`, PEOPLE.outsider!.id)
    const r = await b.storage.createImport(
      {
        id: randomUUID(),
        vaultId: id,
        environment: 'development',
        senderId: PEOPLE.owner!.id,
        signInId: null,
        values: [],
        refused: [],
        createdAt: b.clock.now,
        expiresAt: new Date(b.clock.now.getTime() + TTL),
        limit: { maxVariables: 10_000, maxBytes: 1 << 20 },
      },
      testLogEntry({ vaultId: id, action: 'push_created', environment: 'development', names: [] }),
    )
    t.ok(r.ok)
  }
  const outsider = session(b.app, 'outsider')
  calls.length = 0
  const exact = await outsider.get('/sign-ins')
  t.match(TOP_BAR.exec(exact.body)?.[0], `>${WAITING_VAULTS} pushes waiting</a>`, `${WAITING_VAULTS} vaults: counted exactly`)
  t.equal(calls.length, WAITING_VAULTS, 'one query per vault')

  await addVault(b, 'One too many', PEOPLE.outsider!.id)
  calls.length = 0
  const over = await outsider.get('/sign-ins')
  t.equal(calls.length, WAITING_VAULTS, `never more than ${WAITING_VAULTS} queries`)
  // which 50 are counted is the storage's order of vaults; the new one may be among them
  const shown = />(\d+)\+ pushes waiting<\/a>/.exec(TOP_BAR.exec(over.body)?.[0] ?? '')
  t.ok(shown, 'over the limit: "at least"')
  t.ok(Number(shown?.[1]) >= WAITING_VAULTS - 1 && Number(shown?.[1]) <= WAITING_VAULTS, `counted ${shown?.[1]}`)
})

t.test('a failure while counting leaves the badge out, not the page', async (t) => {
  const { storage } = countedStorage()
  const b = await build(t, { storage })
  await b.push('development', { A: 'canary-x' })
  storage.listImports = async () => {
    throw new Error('database went away')
  }
  const res = await session(b.app, 'owner').get('/')
  t.equal(res.statusCode, 200)
  t.match(res.body, '<h1>Your vaults</h1>')
  t.notMatch(res.body, /waiting/)
  t.match(b.logs.join('\n'), /counting the pushes waiting failed/, 'logged')
})

import t, { type Test } from 'tap'
import { isMemory, postgresQuery, storageUnderTest } from '../storage-under-test.js'
import { build, session } from './helpers.js'

// Issue 12: history and rollback through the pages, on the store under test (memory, or
// PostgreSQL in test:postgres; SQLite runs the same flow in the server's tests).

const BIG = 'x'.repeat(64 * 1024 - 7) + '🔑é\n'
const V1: Record<string, string> = {
  DATABASE_URL: 'postgres://app:s3cret@db/app',
  MULTI: 'line one\nline two\r\nline three\n',
  QUOTES: `it's "quoted" \`and\` \\escaped\\ $HOME`,
  UNICODE: 'ünïcödé 中文 🔐 \u200b',
  BIG,
}
const V2: Record<string, string> = { DATABASE_URL: 'postgres://wrong-host/app', MULTI: 'replaced', NEW_ONE: 'canary-history-new-77', UNICODE: 'changed ✓' }

async function setup(t: Test) {
  return build(t, { storage: await storageUnderTest(t) })
}

/** Sends a push as the editor and applies it as the owner, on the review page; its change set id. */
async function pushAndApply(b: Awaited<ReturnType<typeof setup>>, env: string, values: Record<string, string>): Promise<string> {
  const id = await b.push(env, values)
  const owner = session(b.app, 'owner')
  await owner.get(`/v/${b.vaultId}/variables/imports/${id}`)
  const r = await owner.post(`/v/${b.vaultId}/variables/imports/${id}/apply`, {})
  if (r.statusCode !== 303) throw new Error(`apply answered ${r.statusCode}`)
  const [c] = await b.storage.listChangeSets(b.vaultId, { ref: id, limit: 1 })
  return c!.id
}

/** GETs a confirmation page and POSTs its form (version and also as the page gave them). */
async function confirm(s: ReturnType<typeof session>, url: string) {
  const page = await s.get(url)
  const version = /name="version" value="(\d+)"/.exec(page.body)?.[1] ?? ''
  const also = /type="hidden" name="also" value="(1?)"/.exec(page.body)?.[1] ?? ''
  return { page, done: await s.post(url.replace(/\?.*$/, ''), { version, also }) }
}

t.test('a wrong push applied to production is undone in two clicks, every value byte for byte', async (t) => {
  const b = await setup(t)
  // with "Require a second person" (production's default) a revert is proposed instead
  // (second-person.test.ts); here the owners turned it off
  const settings = session(b.app, 'owner')
  await settings.get(`/v/${b.vaultId}/settings`)
  t.equal((await settings.post(`/v/${b.vaultId}/settings/environment`, { environment: 'production', owners_only: 'on' })).statusCode, 303)
  await pushAndApply(b, 'production', V1)
  const before = await b.current('production')
  t.same(before, V1)
  const pushId = await b.push('production', V2)
  const owner = session(b.app, 'owner')
  await owner.get(`/v/${b.vaultId}/variables/imports/${pushId}`)
  t.equal((await owner.post(`/v/${b.vaultId}/variables/imports/${pushId}/apply`, {})).statusCode, 303)
  t.same(await b.current('production'), { ...V1, ...V2 })

  // the review page links the change it made; the change page offers Revert this change
  const review = await owner.get(`/v/${b.vaultId}/variables/imports/${pushId}`)
  const changeUrl = /href="(\/v\/[^"]+\/changes\/[^"]+)">The change it made/.exec(review.body)?.[1]
  t.ok(changeUrl, 'the review page links the change')
  const change = await owner.get(changeUrl!)
  t.equal(change.statusCode, 200)
  t.match(change.body, /<code class="name">NEW_ONE<\/code><\/a><\/td>\n<td data-label="Change"><span class="mark mark-added">added/)
  t.match(change.body, /<code class="name">DATABASE_URL<\/code><\/a><\/td>\n<td data-label="Change"><span class="mark mark-changed">changed/)
  t.notMatch(change.body, 'wrong-host', 'values hidden until Reveal')
  t.match(change.body, '>Revert this change<')
  t.match(change.body, '>Restore this environment to this point<')

  // click one: the confirmation lists exactly what will be written and deleted
  const first = await owner.get(`${changeUrl}/revert`)
  t.same(await b.current('production'), { ...V1, ...V2 }, 'nothing changed by showing the confirmation')
  const { page, done } = await confirm(owner, `${changeUrl}/revert`)
  t.equal(first.body, page.body.replace(/name="_csrf" value="[^"]+"/, /name="_csrf" value="[^"]+"/.exec(first.body)![0]), 'the same list twice')
  t.match(
    page.body,
    /Will be written \(3\)<\/h2>\n<p><code class="name">DATABASE_URL<\/code>, <code class="name">MULTI<\/code>, <code class="name">UNICODE<\/code><\/p>/,
  )
  t.match(page.body, /Will be deleted \(1\)<\/h2>\n<p><code class="name">NEW_ONE<\/code><\/p>/)
  // click two
  t.equal(done.statusCode, 303)
  const after = await b.current('production')
  t.same(after, V1, 'every value is what it was')
  for (const [k, v] of Object.entries(V1)) t.ok(Buffer.from(after[k]!, 'utf8').equals(Buffer.from(v, 'utf8')), `${k} byte for byte`)

  // the push's review page says who reverted it and when
  const again = await owner.get(`/v/${b.vaultId}/variables/imports/${pushId}`)
  t.match(again.body, /Reverted by <span class="person">Olga Owner<\/span>.* at <a href="[^"]+"><time datetime="/)
  const log = await b.storage.listAccessLog(b.vaultId, { action: 'change_reverted', limit: 5 })
  t.equal(log.length, 1)
  t.same([...log[0]!.names].sort(), ['DATABASE_URL', 'MULTI', 'NEW_ONE', 'UNICODE'])
  const everything = JSON.stringify(await b.storage.listAccessLog(b.vaultId, { limit: 100 })) + b.logs.join('\n')
  for (const v of [...Object.values(V1), ...Object.values(V2)]) t.notOk(everything.includes(v), 'no value in the access log or the server log')

  // Reveal on the change page: logged as history_revealed with the names, before any value shows
  const revealed = await owner.post(`${changeUrl}/reveal`, {})
  t.match(revealed.body, '<code class="value">postgres://wrong-host/app</code>')
  t.match(revealed.body, '<code class="value">postgres://app:s3cret@db/app</code>')
  const [r] = await b.storage.listAccessLog(b.vaultId, { limit: 1 })
  t.equal(r?.action, 'history_revealed')
  t.same([...(r?.names ?? [])].sort(), ['DATABASE_URL', 'MULTI', 'NEW_ONE', 'UNICODE'])
})

t.test('a deleted variable comes back, and its versions are listed with their values revealable', async (t) => {
  const b = await setup(t)
  const owner = session(b.app, 'owner')
  await owner.get(`/v/${b.vaultId}`)
  t.equal((await owner.post(`/v/${b.vaultId}/variables/add`, { environment: 'development', name: 'API_KEY', value: 'first-value' })).statusCode, 303)
  t.equal((await owner.post(`/v/${b.vaultId}/variables/change`, { environment: 'development', name: 'API_KEY', value: 'second-value' })).statusCode, 303)
  t.equal((await owner.post(`/v/${b.vaultId}/variables/delete`, { environment: 'development', name: 'API_KEY' })).statusCode, 303)
  t.same(await b.current('development'), {})
  const history = await owner.get(`/v/${b.vaultId}/history/development`)
  t.equal(history.statusCode, 200)
  t.match(history.body, '<h1>History of development</h1>')
  const changes = [...history.body.matchAll(/href="(\/v\/[^"]+\/changes\/[^"]+)"/g)].map((m) => m[1]!)
  t.equal(changes.length, 3, 'three change sets, newest first')
  const { done } = await confirm(owner, `${changes[0]}/revert`)
  t.equal(done.statusCode, 303)
  t.same(await b.current('development'), { API_KEY: 'second-value' }, 'the deleted variable is back with its last value')

  const versions = await owner.get(`/v/${b.vaultId}/history/development/variables/API_KEY`)
  t.equal(versions.statusCode, 200)
  t.equal([...versions.body.matchAll(/<span class="mark mark-/g)].length, 4, 'added, changed, deleted, added back')
  const firstChange = changes[2]!.split('/').pop()!
  const shown = await owner.post(`/v/${b.vaultId}/history/development/variables/API_KEY/reveal`, { change: firstChange })
  t.match(shown.body, '<code class="value">first-value</code>')
  t.notMatch(shown.body, 'second-value', 'only the version asked for')
  const [r] = await b.storage.listAccessLog(b.vaultId, { limit: 1 })
  t.equal(r?.action, 'history_revealed')
  t.same(r?.names, ['API_KEY'])
})

t.test('restore to a point after many mixed changes equals that moment (against a model)', async (t) => {
  const b = await setup(t)
  const owner = session(b.app, 'owner')
  await owner.get(`/v/${b.vaultId}`)
  const model: Record<string, string> = {}
  const snapshots: { change: string; state: Record<string, string> }[] = []
  let seed = 7
  const rand = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31
    return seed % n
  }
  const names = ['A', 'B', 'C', 'D', 'E', 'F']
  for (let i = 0; i < 40; i++) {
    const name = names[rand(names.length)]!
    const op = rand(4)
    if (op === 3) {
      const values = { [name]: `push-${i}`, [names[rand(names.length)]!]: `push-b-${i}\n'"` }
      await pushAndApply(b, 'development', values)
      Object.assign(model, values)
    } else if (name in model && op === 2) {
      await owner.post(`/v/${b.vaultId}/variables/delete`, { environment: 'development', name })
      delete model[name]
    } else {
      await owner.post(`/v/${b.vaultId}/variables/${name in model ? 'change' : 'add'}`, { environment: 'development', name, value: `page-${i} ✓` })
      model[name] = `page-${i} ✓`
    }
    const [latest] = await b.storage.listChangeSets(b.vaultId, { environment: 'development', limit: 1 })
    if (latest && snapshots.at(-1)?.change !== latest.id) snapshots.push({ change: latest.id, state: { ...model } })
    else if (snapshots.length) snapshots[snapshots.length - 1] = { change: latest!.id, state: { ...model } }
  }
  t.same(await b.current('development'), model, 'the model follows the environment')
  for (const point of [snapshots[3]!, snapshots[Math.floor(snapshots.length / 2)]!, snapshots[0]!]) {
    const { page, done } = await confirm(owner, `/v/${b.vaultId}/changes/${point.change}/restore`)
    t.match(page.body, '<h1>Restore this environment to this point</h1>')
    t.equal(done.statusCode, 303)
    t.same(await b.current('development'), point.state, `restored to change ${point.change}`)
  }
  const log = await b.storage.listAccessLog(b.vaultId, { action: 'environment_restored', limit: 10 })
  t.equal(log.length, 3)
})

t.test('revert: later changes are conflicts, left alone unless the person ticks the box', async (t) => {
  const b = await setup(t)
  const first = await pushAndApply(b, 'development', { A: 'a1', B: 'b1' })
  const second = await pushAndApply(b, 'development', { A: 'a2', B: 'b2' })
  await pushAndApply(b, 'development', { A: 'a3' })
  const owner = session(b.app, 'owner')
  const plain = await owner.get(`/v/${b.vaultId}/changes/${second}/revert`)
  t.match(plain.body, /Will be written \(1\)<\/h2>\n<p><code class="name">B<\/code><\/p>/)
  t.match(plain.body, /Changed again since \(1\)<\/h2>\n<p><code class="name">A<\/code><\/p>/)
  t.match(plain.body, 'Also revert later changes to these variables')
  const { done } = await confirm(owner, `/v/${b.vaultId}/changes/${second}/revert`)
  t.equal(done.statusCode, 303)
  t.same(await b.current('development'), { A: 'a3', B: 'b1' }, 'A left alone')
  const { page, done: also } = await confirm(owner, `/v/${b.vaultId}/changes/${second}/revert?also=1`)
  t.match(page.body, /Will be written \(1\)<\/h2>\n<p><code class="name">A<\/code><\/p>/)
  t.equal(also.statusCode, 303)
  t.same(await b.current('development'), { A: 'a1', B: 'b1' })
  t.ok(first)
})

t.test('a confirmation that no longer holds is refused and shown again as it is now', async (t) => {
  const b = await setup(t)
  const c = await pushAndApply(b, 'development', { A: 'a1' })
  const owner = session(b.app, 'owner')
  const page = await owner.get(`/v/${b.vaultId}/changes/${c}/revert`)
  const version = /name="version" value="(\d+)"/.exec(page.body)![1]!
  await pushAndApply(b, 'development', { B: 'b1' })
  const late = await owner.post(`/v/${b.vaultId}/changes/${c}/revert`, { version, also: '' })
  t.equal(late.statusCode, 409)
  t.match(late.body, 'the environment changed since this page was shown')
  t.same(await b.current('development'), { A: 'a1', B: 'b1' }, 'nothing written')
})

t.test('who may: history takes the right to read, revert and restore the right to write', async (t) => {
  const b = await setup(t)
  const prod = await pushAndApply(b, 'production', { P: 'p1' })
  const dev = await pushAndApply(b, 'development', { D: 'd1' })
  const editor = session(b.app, 'editor')
  const viewer = session(b.app, 'viewer')
  const outsider = session(b.app, 'outsider')
  t.equal((await viewer.get(`/v/${b.vaultId}/history/development`)).statusCode, 403, 'a viewer reads no history')
  t.equal((await viewer.get(`/v/${b.vaultId}/changes/${dev}`)).statusCode, 403)
  t.equal((await editor.get(`/v/${b.vaultId}/history/production`)).statusCode, 403, 'an editor reads no owners-only history')
  t.equal((await editor.get(`/v/${b.vaultId}/changes/${prod}/revert`)).statusCode, 403)
  t.equal((await outsider.get(`/v/${b.vaultId}/changes/${dev}`)).statusCode, 404, 'not shared: not found')
  t.equal((await editor.get(`/v/${b.vaultId}/history/development`)).statusCode, 200)
  const { done } = await confirm(editor, `/v/${b.vaultId}/changes/${dev}/revert`)
  t.equal(done.statusCode, 303, 'an editor reverts on a shared environment')
  t.same(await b.current('development'), {})
  await viewer.get(`/v/${b.vaultId}`)
  t.equal((await viewer.post(`/v/${b.vaultId}/changes/${dev}/restore`, { version: '0' })).statusCode, 403, 'a viewer never')
  t.same(await b.current('production'), { P: 'p1' })
})

t.test('a tampered stored version fails its reveal with decrypt_failed and opens nothing else', async (t) => {
  const b = await setup(t)
  const good = await pushAndApply(b, 'development', { A: 'good-a' })
  const bad = await pushAndApply(b, 'development', { B: 'canary-tampered-b' })
  const flip = (u: Uint8Array) => {
    const c = new Uint8Array(u)
    c[c.length - 1] = c[c.length - 1]! ^ 1
    return c
  }
  if (isMemory(b.storage)) {
    await b.storage.edit((s) => {
      s.changeSets = s.changeSets.map((c) => (c.id === bad ? { ...c, entries: c.entries.map((e) => ({ ...e, after: e.after && flip(e.after) })) } : c))
    })
  } else {
    const q = postgresQuery(b.storage)!
    await q(
      `update change_entries set after = overlay(after placing '\\x00'::bytea from length(after)) where change_set_seq = (select seq from change_sets where id = $1)`,
      [bad],
    )
  }
  const owner = session(b.app, 'owner')
  await owner.get(`/v/${b.vaultId}/changes/${bad}`)
  const res = await owner.post(`/v/${b.vaultId}/changes/${bad}/reveal`, {})
  t.equal(res.statusCode, 500)
  const ref = /<code>([A-Z0-9]{6,})<\/code>/.exec(res.body)?.[1]
  t.ok(ref, 'the page gives a ref')
  const record = b.logs.find((l) => l.includes(`"ref":"${ref}"`)) ?? ''
  t.match(record, 'a value did not decrypt', 'the log has the full record under the ref')
  t.notMatch(res.body, 'canary-tampered-b')
  const ok = await owner.post(`/v/${b.vaultId}/changes/${good}/reveal`, {})
  t.equal(ok.statusCode, 200, 'the other versions still open')
  t.match(ok.body, '<code class="value">good-a</code>')
})

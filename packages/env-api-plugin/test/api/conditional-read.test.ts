import t from 'tap'
import { build, expectApi, tamper } from './helpers.js'

// Issue 24, item 3: the read `envkeep run --watch` checks with. If-None-Match with the ETag it
// has: 304 without opening a value when nothing it depends on changed, logged as a read.
// Memory here; PostgreSQL in test:postgres.

t.test('If-None-Match: 304 when unchanged (no value opened, logged as a read), 200 with a new ETag when changed', async (t) => {
  const b = await build(t)
  const v = await b.createVault('alice', { members: { bob: 'editor' } })
  await b.setValues(v, 'development', { A_ONE: 'one', B_TWO: 'two' })
  const token = await b.signIn('alice')
  const url = `/api/env/${v}/development`

  const plain = await b.get(url, token)
  t.equal(plain.headers.etag, undefined, 'a plain read computes no tag')
  const first = await b.get(url, token, { 'if-none-match': '"none"' })
  t.equal(first.statusCode, 200)
  const etag = first.headers.etag as string
  t.match(etag, /^"[A-Za-z0-9_-]{32}"$/)
  t.same(first.json().variables, { A_ONE: 'one', B_TWO: 'two' })

  // a tampered value: a full read fails, the conditional one answers 304 -- it opened nothing
  await tamper.flipByte(b.storage, v, 'B_TWO')
  t.equal((await b.get(url, token)).statusCode, 500)
  const same = await b.get(url, token, { 'if-none-match': etag })
  t.equal(same.statusCode, 304)
  t.equal(same.body, '', 'no body: HTTP forbids one on 304 (the one answer of the API that is not JSON)')
  t.equal(same.headers.etag, etag)
  t.equal(same.headers['cache-control'], 'no-store, private')
  const reads = await b.storage.listAccessLog(v, { action: 'read', limit: 10 })
  t.same(reads[0]?.names, ['A_ONE', 'B_TWO'], 'the 304 is logged as a read, with the names')
  t.equal(reads[0]?.environment, 'development')

  // a change (here: of another environment, which a reference may lead into) gives a new tag
  await b.setValues(v, 'development', { B_TWO: 'two again' })
  const changed = await b.get(url, token, { 'if-none-match': etag })
  t.equal(changed.statusCode, 200)
  expectApi(t, changed)
  t.not(changed.headers.etag, etag)
  t.same(changed.json().variables, { A_ONE: 'one', B_TWO: 'two again' })
  await b.setValues(v, 'preview', { ELSEWHERE: 'x' })
  t.equal((await b.get(url, token, { 'if-none-match': changed.headers.etag as string })).statusCode, 200, 'any environment of the vault counts')

  // rights are checked first: a role that may not read is refused, never 304
  const bob = await b.signIn('bob')
  await b.setValues(v, 'production', { SECRET: 'canary-conditional' })
  const refused = await b.get(`/api/env/${v}/production`, bob, { 'if-none-match': etag })
  t.equal(refused.statusCode, 403)
  // and the tag is the reader's own: another person's tag for the same environment differs
  const bobTag = (await b.get(url, bob, { 'if-none-match': '"none"' })).headers.etag
  t.not(bobTag, changed.headers.etag)
})

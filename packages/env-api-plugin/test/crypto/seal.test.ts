import t from 'tap'
import { open, openText, placeOf, placesIn, releaseSealed, reseal, seal, sealText, sealTexts } from '../../src/crypto/seal.js'
import { createLocalKeyring } from '../../src/index.js'
import { createBrokenKeyring, createTestKeyring } from '../../src/testing/keyring.js'

const key = Buffer.alloc(32, 1)

t.test('seal: a random nonce each time, opens only in its place', async (t) => {
  const place = placeOf('v1', 'development', 'A')
  const a = seal(key, Buffer.from('value'), place)
  const b = seal(key, Buffer.from('value'), place)
  t.notSame(a, b, 'two seals of one value differ')
  t.equal(a.length, 12 + 5 + 16, 'nonce ‖ ciphertext ‖ tag')
  t.equal(open(key, a, place).toString(), 'value')
  for (const other of [
    placeOf('v2', 'development', 'A'),
    placeOf('v1', 'preview', 'A'),
    placeOf('v1', 'development', 'B'),
    placeOf('v1d', 'evelopment', 'A'),
  ]) {
    t.throws(() => open(key, a, other), 'another place does not open')
  }
  t.throws(() => open(Buffer.alloc(32, 2), a, place), 'another key does not open')
  const flipped = Buffer.from(a)
  flipped[13] = (flipped[13] as number) ^ 1
  t.throws(() => open(key, flipped, place), 'a flipped byte does not open')
  t.throws(() => open(key, a.subarray(0, 20), place), 'a short value does not open')
})

t.test('placesIn: the bytes of placeOf for every name (values stored under them must keep opening)', async (t) => {
  // the layout values are stored under: each part's UTF-8 length (4 bytes, big-endian), then its bytes
  t.equal(
    placeOf('v1', 'development', 'A').toString('hex'),
    `00000002${Buffer.from('v1').toString('hex')}0000000b${Buffer.from('development').toString('hex')}0000000141`,
  )
  const vaultId = '0b8f3c1e-1111-2222-3333-444455556666'
  const place = placesIn(vaultId, 'préprod')
  for (const name of ['A', 'DATABASE_URL', 'É_NAME', 'ключ', 'EMOJI_😀', 'LONE_\ud800', '', 'X'.repeat(300)]) {
    t.same(place(name), placeOf(vaultId, 'préprod', name), `the same bytes for ${JSON.stringify(name)}`)
  }
  t.same(place('A'), place('A'), 'again: nothing of one name is left in the next')
  const a = seal(key, Buffer.from('value'), place('A'))
  t.equal(open(key, a, placeOf(vaultId, 'préprod', 'A')).toString(), 'value', 'sealed in one, opened in the other')
})

t.test('seal: nonces from the pool never repeat across refills, and each key opens only its own', async (t) => {
  const place = placeOf('v1', 'development', 'A')
  const seen = new Set<string>()
  for (let i = 0; i < 1500; i++) seen.add(seal(key, Buffer.from('v'), place).subarray(0, 12).toString('hex'))
  t.equal(seen.size, 1500, 'every nonce differs, past several refills of the pool')
  // two key buffers: each gets its own key (a plain Uint8Array too), never the other's
  const k2 = new Uint8Array(32).fill(2)
  const a = seal(key, Buffer.from('one'), place)
  const b = seal(k2, Buffer.from('two'), place)
  t.equal(open(Buffer.alloc(32, 1), a, place).toString(), 'one', 'another buffer with the same bytes opens it')
  t.equal(open(k2, b, place).toString(), 'two')
  t.throws(() => open(k2, a, place), "the second key does not open the first one's value")
  t.throws(() => open(key, b, place), 'nor the other way round')
  t.equal(open(key, seal(key, Buffer.alloc(0), place), place).length, 0, 'an empty value seals and opens')
})

t.test('local keyring: wraps per vault, refuses bad keys and the wrong vault', async (t) => {
  t.throws(() => createLocalKeyring(Buffer.alloc(31)), TypeError)
  const k = createLocalKeyring(key)
  const dataKey = Buffer.alloc(32, 9)
  const wrapped = await k.wrap(dataKey, 'vault-1')
  t.notOk(Buffer.from(wrapped).includes(dataKey), 'the data key is not stored in plain')
  t.same(Buffer.from(await k.unwrap(wrapped, 'vault-1')), dataKey)
  await t.rejects(k.unwrap(wrapped, 'vault-2'), 'bound to its vault')
  await t.rejects(createLocalKeyring(Buffer.alloc(32, 3)).unwrap(wrapped, 'vault-1'), 'another master key fails')
  await t.rejects(createBrokenKeyring().unwrap(wrapped, 'vault-1'))
  const tk = createTestKeyring('x')
  t.same(Buffer.from(await createTestKeyring('x').unwrap(await tk.wrap(dataKey, 'v'), 'v')), dataKey, 'same label, same key')
})

t.test('sealText, openText and reseal: strings in and out, the same sealed form as seal', async (t) => {
  const place = placeOf('v1', 'development', 'A')
  for (const text of ['', 'value', 'é'.repeat(3000), 'x'.repeat(65_536)]) {
    const sealed = sealText(key, text, place)
    t.equal(sealed.length, 12 + Buffer.byteLength(text) + 16)
    t.equal(open(key, sealed, place).toString('utf8'), text, 'opens with open')
    t.equal(openText(key, seal(key, Buffer.from(text), place), place), text, 'openText opens what seal made')
    const other = Buffer.alloc(32, 7)
    const moved = reseal(key, other, sealed, place)
    t.equal(openText(other, moved, place), text, 'resealed under the other key')
    t.throws(() => openText(key, moved, place), 'and no longer under the first')
  }
  t.equal(openText(key, sealText(key, 'short', place), place), 'short', 'a short one after a long one: nothing of the long one left')
  t.throws(() => openText(key, sealText(key, 'value', place), placeOf('v1', 'development', 'B')), 'another place does not open')
})

t.test('sealTexts: each value sealed in its own place, the sealed values parts of one buffer', async (t) => {
  const texts = ['a', '', 'é'.repeat(100), 'x'.repeat(5000)]
  const places = texts.map((_, i) => placeOf('v1', 'development', `N${i}`))
  const sealed = sealTexts(key, texts, places)
  t.equal(sealed.length, 4)
  t.ok(
    sealed.every((s) => s.buffer === sealed[0]?.buffer),
    'one block of memory',
  )
  sealed.forEach((s, i) => {
    t.equal(s.length, 12 + Buffer.byteLength(texts[i] as string) + 16)
    t.equal(openText(key, s, places[i] as Buffer), texts[i])
    t.throws(() => open(key, s, places[(i + 1) % 4] as Buffer), 'not in another place')
  })
  t.not(sealed[0]?.subarray(0, 12).toString('hex'), sealed[1]?.subarray(0, 12).toString('hex'), 'a nonce each')
})

// Issue 20, item 5: a push's block is freed once storage has its values, not at the next full collection.
t.test('releaseSealed frees the block sealTexts made, and nothing else', async (t) => {
  const places = ['A', 'B'].map((n) => placeOf('v1', 'development', n))
  const sealed = sealTexts(key, ['one', 'two'], places)
  const block = sealed[0]?.buffer as ArrayBuffer
  t.equal(block.byteLength, 2 * (12 + 3 + 16))
  releaseSealed(sealed[1])
  t.equal(block.byteLength, 0, 'the block is freed')
  t.ok(
    sealed.every((s) => s.length === 0),
    'and its parts are empty',
  )
  releaseSealed(sealed[0]) // twice: nothing left to do

  const single = seal(key, Buffer.from('value'), places[0] as Buffer)
  const copy = Buffer.from(single)
  releaseSealed(single)
  t.same(single, copy, "a value sealTexts did not make is left as it is (it may be a slice of Node's pool)")
  releaseSealed(undefined) // a push of nothing
})

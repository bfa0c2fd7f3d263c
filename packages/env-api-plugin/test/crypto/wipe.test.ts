import t from 'tap'
import { release, wipe } from '../../src/crypto/wipe.js'

t.test('wipe zeroes plaintext and frees a large buffer that owns its memory', async (t) => {
  const big = Buffer.alloc(64 * 1024, 0x61)
  const view = new Uint8Array(big.buffer) // another view of the same memory, to see it zeroed
  const ab = big.buffer
  wipe(big)
  t.equal(ab.byteLength, 0, 'its ArrayBuffer is detached: the memory is freed now')
  t.equal(big.length, 0)
  t.equal(view.length, 0)
})

t.test('a slice of shared memory is only zeroed: the rest of it is left alone', async (t) => {
  const small = Buffer.from('secret-value', 'utf8') // from Node's shared pool
  const pool = small.buffer
  const size = pool.byteLength
  wipe(small)
  t.equal(small.length, 12)
  t.ok(
    small.every((b) => b === 0),
    'zeroed',
  )
  t.equal(pool.byteLength, size, 'the pool is not detached')
  const whole = Buffer.alloc(128 * 1024, 0x62)
  const part = whole.subarray(1024, 65 * 1024)
  wipe(part)
  t.equal(whole.length, 128 * 1024, 'a large slice does not free its parent')
  t.ok(part.every((b) => b === 0))
  t.equal(whole[0], 0x62)
  t.equal(whole[whole.length - 1], 0x62)
})

t.test('release frees a buffer that owns its memory, whatever its size, and leaves an empty one alone', async (t) => {
  const small = Buffer.alloc(16, 1) // Buffer.alloc never takes from the pool
  const ab = small.buffer
  release(small)
  t.equal(ab.byteLength, 0, 'detached')
  const empty = Buffer.alloc(0)
  release(empty)
  t.notOk((empty.buffer as ArrayBuffer & { detached: boolean }).detached, 'an empty buffer may be shared: not detached')
})

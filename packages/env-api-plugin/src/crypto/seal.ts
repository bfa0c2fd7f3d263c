import { createCipheriv, createDecipheriv, createSecretKey, randomFillSync, type KeyObject } from 'node:crypto'
import { release, wipe } from './wipe.js'

const NONCE = 12
const TAG = 16

/**
 * Additional data binding a sealed value to its place: a ciphertext moved
 * to another vault, environment or name fails to open. Length-prefixed so
 * no two places share the same bytes.
 */
export function placeOf(vaultId: string, environment: string, name: string): Buffer {
  return lengthPrefixed([vaultId, environment, name])
}

/**
 * `placeOf` for many names of one environment (a push seals, a read opens, one per value):
 * the same bytes, the vault and environment encoded once instead of for every name.
 */
export function placesIn(vaultId: string, environment: string): (name: string) => Buffer {
  const head = lengthPrefixed([vaultId, environment])
  return (name) => {
    const length = Buffer.byteLength(name, 'utf8')
    // every byte is written below: the head, the length, the name (byteLength counts as write encodes)
    const out = Buffer.allocUnsafe(head.length + 4 + length)
    head.copy(out, 0)
    writePart(out, head.length, name)
    return out
  }
}

/**
 * Additional data of one version kept in history (issue 12): vault,
 * environment, name, the change set and which side of it (`before` or
 * `after`). Five parts where a variable has three: no version opens as a
 * variable or as another version.
 */
export function historyPlaceOf(vaultId: string, environment: string, name: string, changeSetId: string, side: 'before' | 'after'): Buffer {
  return lengthPrefixed([vaultId, environment, name, changeSetId, side])
}

/**
 * Additional data of a webhook's signing secret (issue 14): four parts, so
 * no secret opens as a variable (three) or a kept version (five), nor as
 * another vault's or another webhook's secret.
 */
export function webhookPlaceOf(vaultId: string, webhookId: string): Buffer {
  return lengthPrefixed(['webhook secret', vaultId, webhookId, 'v1'])
}

/**
 * Additional data of a personal override (issue 24): six parts, bound to the
 * person, so no override opens as a variable, a kept version, a secret, or
 * another person's override.
 */
export function overridePlaceOf(vaultId: string, environment: string, name: string, personId: string): Buffer {
  return lengthPrefixed(['personal override', vaultId, environment, name, personId, 'v1'])
}

/**
 * Additional data of an environment's snapshot (issue 20): the values of one
 * environment sealed together, in memory only (vault-service.ts), so a
 * repeated read opens one ciphertext instead of one per value. Four parts
 * led by their own label: nothing stored opens as one.
 */
export function snapshotPlaceOf(vaultId: string, environment: string): Buffer {
  return lengthPrefixed(['environment snapshot', vaultId, environment, 'v1'])
}

/** One buffer, written in place (a slice of Node's pool when small): no buffer per part. */
function lengthPrefixed(strings: readonly string[]): Buffer {
  let size = 0
  for (const s of strings) size += 4 + Buffer.byteLength(s, 'utf8')
  const out = Buffer.allocUnsafe(size)
  let off = 0
  for (const s of strings) off = writePart(out, off, s)
  return out
}

/** Writes one part at `off`: its UTF-8 length (4 bytes, big-endian), then its bytes; answers where it ends. */
function writePart(out: Buffer, off: number, s: string): number {
  const n = out.write(s, off + 4, 'utf8')
  out.writeUInt32BE(n, off)
  return off + 4 + n
}

/**
 * The KeyObject of a raw key, made once per key buffer: `createCipheriv` given
 * raw bytes imports the key again on every call (about two thirds of a seal's
 * CPU). Held only as long as the buffer itself is reachable (a WeakMap keyed by
 * the buffer: the data-key cache's buffers), so it keeps no key longer than its
 * holder does. A key buffer must not be refilled with another key once used.
 */
const keyObjects = new WeakMap<Uint8Array, KeyObject>()

function keyObjectOf(key: Uint8Array): KeyObject {
  let k = keyObjects.get(key)
  if (!k) {
    k = createSecretKey(key)
    keyObjects.set(key, k)
  }
  return k
}

/**
 * Nonces are cut from a pool of random bytes filled 4 KiB at a time (one
 * `randomFillSync` per 341 seals instead of one `randomBytes` each); each
 * 12 bytes are handed out once and the pool is refilled before any reuse.
 */
const noncePool = Buffer.allocUnsafe(NONCE * 341)
let nonceAt = noncePool.length

/** AES-256-GCM with a random 96-bit nonce: returns nonce ‖ ciphertext ‖ tag (one buffer). */
export function seal(key: Uint8Array, plaintext: Uint8Array, aad: Uint8Array): Buffer {
  return sealInto(key, plaintext, aad, Buffer.allocUnsafe(NONCE + plaintext.length + TAG))
}

/** `seal` into `out`, exactly NONCE + plaintext + TAG bytes long. */
function sealInto(key: Uint8Array, plaintext: Uint8Array, aad: Uint8Array, out: Buffer): Buffer {
  if (nonceAt + NONCE > noncePool.length) {
    randomFillSync(noncePool)
    nonceAt = 0
  }
  noncePool.copy(out, 0, nonceAt, nonceAt + NONCE)
  nonceAt += NONCE
  const c = createCipheriv('aes-256-gcm', keyObjectOf(key), out.subarray(0, NONCE))
  c.setAAD(aad)
  // each piece the cipher answers is a buffer of its own, copied and freed at once (crypto/wipe.ts)
  let at = NONCE + copyOut(c.update(plaintext), out, NONCE)
  at += copyOut(c.final(), out, at)
  copyOut(c.getAuthTag(), out, at)
  return out
}

function copyOut(piece: Buffer, out: Buffer, at: number): number {
  const n = piece.copy(out, at)
  release(piece)
  return n
}

/**
 * Plaintext of `sealText`, encoded here rather than in a buffer per value; zeroed after each
 * seal, grown to the largest value sealed (values are at most 64 KiB).
 */
let scratch = Buffer.alloc(4096)

/** `seal` of a string's UTF-8 bytes, without a buffer of its own for the plaintext. */
export function sealText(key: Uint8Array, text: string, aad: Uint8Array): Buffer {
  return sealTextInto(key, text, aad, null)
}

/**
 * `sealText` of several strings, each in its place, into one block of memory (the sealed
 * values are parts of one buffer): a push of 1,000 values is one allocation, not 140 slabs
 * of Node's pool that live as long as their longest-lived part and, once a garbage
 * collection has moved them out of the young generation, until the next full one.
 */
export function sealTexts(key: Uint8Array, texts: readonly string[], aads: readonly Uint8Array[]): Buffer[] {
  const sizes = texts.map((text) => Buffer.byteLength(text, 'utf8'))
  const block = Buffer.allocUnsafeSlow(sizes.reduce((n, size) => n + NONCE + size + TAG, 0))
  sealedBlocks.add(block.buffer)
  let at = 0
  return texts.map((text, i) => {
    const end = at + NONCE + (sizes[i] as number) + TAG
    const out = block.subarray(at, end)
    at = end
    return sealTextInto(key, text, aads[i] as Uint8Array, out)
  })
}

/** The blocks sealTexts made: only these are freed by releaseSealed. */
const sealedBlocks = new WeakSet<ArrayBufferLike>()

/**
 * Frees now the block that `sealTexts` sealed `part` and its siblings into (a push's values,
 * given any one of them, once storage has them: storage copies what it keeps), instead of when a full collection gets to it: a push
 * waits on the database long enough for its block to be moved out of the young generation,
 * and a 1 MiB push's block then stayed until V8 started a full collection for ~64 MiB of
 * external memory (bench/README.md, "memory4"). Parts of anything else are left alone.
 */
export function releaseSealed(part: Uint8Array | undefined): void {
  const block = part?.buffer
  if (block === undefined || !sealedBlocks.has(block)) return
  sealedBlocks.delete(block)
  release(new Uint8Array(block))
}

function sealTextInto(key: Uint8Array, text: string, aad: Uint8Array, out: Buffer | null): Buffer {
  if (text.length * 3 > scratch.length) {
    const bytes = Buffer.byteLength(text, 'utf8')
    if (bytes > scratch.length) scratch = Buffer.alloc(Math.max(bytes, scratch.length * 2))
  }
  const n = scratch.write(text, 0, 'utf8')
  try {
    const plaintext = scratch.subarray(0, n)
    return out ? sealInto(key, plaintext, aad, out) : seal(key, plaintext, aad)
  } finally {
    scratch.fill(0, 0, n)
  }
}

/** Opens what `seal` made. Throws on any tampering, wrong key or wrong place. */
export function open(key: Uint8Array, sealed: Uint8Array, aad: Uint8Array): Buffer {
  if (sealed.length < NONCE + TAG) throw new Error('sealed value too short')
  const buf = Buffer.from(sealed.buffer, sealed.byteOffset, sealed.byteLength)
  const d = createDecipheriv('aes-256-gcm', keyObjectOf(key), buf.subarray(0, NONCE))
  d.setAAD(aad)
  d.setAuthTag(buf.subarray(buf.length - TAG))
  const body = d.update(buf.subarray(NONCE, buf.length - TAG))
  const rest = d.final()
  // GCM's final block is empty (nothing to free: `release` skips an empty buffer)
  if (rest.length === 0) return body
  const whole = Buffer.concat([body, rest])
  wipe(body)
  wipe(rest)
  return whole
}

/** `open`, answered as a string; the plaintext buffer is zeroed and freed at once. */
export function openText(key: Uint8Array, sealed: Uint8Array, aad: Uint8Array): string {
  const plain = open(key, sealed, aad)
  const text = plain.toString('utf8')
  wipe(plain)
  return text
}

/** Opens under one key and seals again under another, in the same place; the plaintext is zeroed and freed at once. */
export function reseal(oldKey: Uint8Array, newKey: Uint8Array, sealed: Uint8Array, aad: Uint8Array): Buffer {
  const plain = open(oldKey, sealed, aad)
  try {
    return seal(newKey, plain, aad)
  } finally {
    wipe(plain)
  }
}

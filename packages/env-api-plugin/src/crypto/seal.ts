import { createCipheriv, createDecipheriv, createSecretKey, randomFillSync, type KeyObject } from 'node:crypto'

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
    out.writeUInt32BE(length, head.length)
    out.write(name, head.length + 4, 'utf8')
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

function lengthPrefixed(strings: readonly string[]): Buffer {
  const parts = strings.map((s) => Buffer.from(s, 'utf8'))
  const out = Buffer.alloc(parts.reduce((n, p) => n + 4 + p.length, 0))
  let off = 0
  for (const p of parts) {
    out.writeUInt32BE(p.length, off)
    p.copy(out, off + 4)
    off += 4 + p.length
  }
  return out
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
  if (nonceAt + NONCE > noncePool.length) {
    randomFillSync(noncePool)
    nonceAt = 0
  }
  const out = Buffer.allocUnsafe(NONCE + plaintext.length + TAG)
  noncePool.copy(out, 0, nonceAt, nonceAt + NONCE)
  nonceAt += NONCE
  const c = createCipheriv('aes-256-gcm', keyObjectOf(key), out.subarray(0, NONCE))
  c.setAAD(aad)
  let at = NONCE + c.update(plaintext).copy(out, NONCE)
  at += c.final().copy(out, at)
  c.getAuthTag().copy(out, at)
  return out
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
  return rest.length === 0 ? body : Buffer.concat([body, rest])
}

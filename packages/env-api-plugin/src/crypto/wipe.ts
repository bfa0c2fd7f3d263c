/**
 * Frees a buffer's memory now when it holds its whole ArrayBuffer (not a slice of Node's
 * pool, nor of anything else): `ArrayBuffer.prototype.transfer(0)` detaches it, and the
 * buffer is empty after. Otherwise the memory waits for the garbage collector, which frees
 * an ArrayBuffer only when it collects the object: a young one at the next scavenge, one
 * that lived through two (a request's buffers often do) at the next full collection, which
 * V8 starts for external memory only after some 64 MiB of it. Meanwhile malloc's heap grows,
 * and keeps what it grew (issue 20, item 5). The caller must hold the only reference and
 * must not have handed the buffer to anything that still reads it (a socket: after `finish`).
 */
export function release(buf: Uint8Array): void {
  const ab = buf.buffer as ArrayBuffer & { transfer?: (length: number) => ArrayBuffer }
  if (buf.byteLength > 0 && buf.byteOffset === 0 && buf.byteLength === ab.byteLength && typeof ab.transfer === 'function') ab.transfer(0)
}

/** Zeroes a buffer of plaintext once used, then `release`s it. */
export function wipe(buf: Uint8Array): void {
  buf.fill(0)
  release(buf)
}

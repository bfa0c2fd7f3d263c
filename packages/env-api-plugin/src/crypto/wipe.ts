/** Below this a buffer may be a slice of Node's shared pool (Buffer.poolSize / 2), and freeing it early is worth little. */
const OWN_BUFFER_MIN = 4096

/**
 * Zeroes a buffer of plaintext once it has been used, and when it holds its whole
 * ArrayBuffer (not a slice of Node's pool, nor of anything else) and is large, frees that
 * memory now (`ArrayBuffer.prototype.transfer(0)` detaches it: the buffer is empty after).
 * Otherwise the memory waits for the garbage collector, which V8 runs for external memory
 * only after some 64 MiB of it: ten 600 KB reads in flight pile up tens of MB of dead
 * plaintext that malloc then keeps (issue 20, item 5). The caller must not use the buffer
 * again, nor have handed it to anything that still reads it (a socket: after `finish`).
 */
export function wipe(buf: Uint8Array): void {
  buf.fill(0)
  const ab = buf.buffer as ArrayBuffer & { transfer?: (length: number) => ArrayBuffer }
  if (buf.byteLength >= OWN_BUFFER_MIN && buf.byteOffset === 0 && buf.byteLength === ab.byteLength && typeof ab.transfer === 'function') ab.transfer(0)
}

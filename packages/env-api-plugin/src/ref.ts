import { randomBytes } from 'node:crypto'

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ'

/** A short random reference: 10 characters of Crockford base32 (50 bits). Holds nothing about anyone. */
export function newRef(): string {
  const bytes = randomBytes(10)
  let out = ''
  for (const b of bytes) out += CROCKFORD[b & 31]
  return out
}

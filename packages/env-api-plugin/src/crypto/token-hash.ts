import { createHash } from 'node:crypto'

/** SHA-256 of a token or code, lowercase hex: the only form storage ever sees. */
export function tokenHash(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex')
}

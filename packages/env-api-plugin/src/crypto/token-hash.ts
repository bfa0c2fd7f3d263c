import { hash } from 'node:crypto'

/** SHA-256 of a token or code, lowercase hex: the only form storage ever sees (one-shot `crypto.hash`: every API request hashes its token). */
export function tokenHash(token: string): string {
  return hash('sha256', token, 'hex')
}

import { createHash } from 'node:crypto'
import { constantEquals } from './tokens.js'

/** RFC 7636 §4.1: 43 to 128 unreserved characters. */
const VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/
/** An S256 challenge is always 43 base64url characters (a SHA-256 digest). */
const S256_CHALLENGE = /^[A-Za-z0-9_-]{43}$/

export function isWellFormedVerifier(verifier: string): boolean {
  return VERIFIER.test(verifier)
}

export function isWellFormedS256Challenge(challenge: string): boolean {
  return S256_CHALLENGE.test(challenge)
}

/** BASE64URL(SHA256(ASCII(code_verifier))) */
export function s256(verifier: string): string {
  return createHash('sha256').update(verifier, 'ascii').digest('base64url')
}

/** Whether `verifier` answers `challenge` (S256 only), compared in constant time. */
export function verifierMatches(verifier: string, challenge: string): boolean {
  return isWellFormedVerifier(verifier) && constantEquals(s256(verifier), challenge)
}

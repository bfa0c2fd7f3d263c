import { createHash, randomBytes } from 'node:crypto'
import { hash, verify, type Algorithm } from '@node-rs/argon2'

/** A random token: 32 bytes, base64url (43 characters). */
export function newToken(): string {
  return randomBytes(32).toString('base64url')
}

/** What storage keeps of a token: its SHA-256, lowercase hex. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex')
}

// argon2id with the OWASP baseline (19 MiB, 2 passes, 1 lane): ~14 ms here.
const ARGON2ID = 2 as Algorithm
const ARGON2_OPTIONS = { algorithm: ARGON2ID, memoryCost: 19_456, timeCost: 2, parallelism: 1 }

export const MIN_PASSWORD = 10
export const MAX_PASSWORD = 1024

/** Why a new password is refused, or null. Never repeats it. */
export function passwordProblem(password: string): string | null {
  if (password.length < MIN_PASSWORD) return `a password needs at least ${MIN_PASSWORD} characters`
  if (password.length > MAX_PASSWORD) return `a password may have at most ${MAX_PASSWORD} characters`
  return null
}

export function hashPassword(password: string): Promise<string> {
  return hash(password, ARGON2_OPTIONS)
}

let dummyHash: Promise<string> | null = null

/**
 * Verifies a password against a stored hash. With no hash (no such
 * account) it still runs one verification against a dummy hash, so a
 * wrong email costs the same time as a wrong password.
 */
export async function verifyPassword(storedHash: string | null, password: string): Promise<boolean> {
  if (storedHash === null) {
    dummyHash ??= hashPassword(newToken())
    await verify(await dummyHash, password).catch(() => false)
    return false
  }
  try {
    return await verify(storedHash, password)
  } catch {
    return false
  }
}

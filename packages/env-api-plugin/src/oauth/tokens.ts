import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'

/** Fixed, service-specific prefixes, so a leaked token is recognisable (secret scanners). */
export const ACCESS_PREFIX = 'ekat_'
export const REFRESH_PREFIX = 'ekrt_'

/** 32 random bytes as 43 base64url characters. */
function random43(): string {
  return randomBytes(32).toString('base64url')
}

/** `ekat_` + 43 base64url characters (32 random bytes). */
export function newAccessToken(): string {
  return ACCESS_PREFIX + random43()
}

/** `ekrt_` + 43 base64url characters (32 random bytes). */
export function newRefreshToken(): string {
  return REFRESH_PREFIX + random43()
}

/** An authorization code: 43 base64url characters (32 random bytes), opaque. */
export function newAuthorizationCode(): string {
  return random43()
}

/**
 * Constant-time equality of two strings. Both sides are hashed first so the
 * comparison takes the same time whatever their lengths.
 */
export function constantEquals(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a, 'utf8').digest()
  const hb = createHash('sha256').update(b, 'utf8').digest()
  return timingSafeEqual(ha, hb)
}

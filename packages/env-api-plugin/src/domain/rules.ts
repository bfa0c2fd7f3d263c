import { MAX_NAME_LENGTH, MAX_REFUSED, MAX_VALUE_BYTES, NAME_RE, RESERVED_PREFIX } from '@envkeep/dotenv'
import type { EnvironmentInfo, Role } from '../adapters/vault-store.js'

/**
 * What a name or value must be (decisions.md). Every reason says what is
 * wrong in words and never repeats what was sent.
 */

// The variable-name pattern and the sizes are the .env grammar's (one source: @envkeep/dotenv,
// which the CLI refuses lines by before sending); the server holds pushes to the same.
export { MAX_NAME_LENGTH, MAX_REFUSED, MAX_VALUE_BYTES, NAME_RE, RESERVED_PREFIX }
/** Longest reason of a refused entry of a push. */
export const MAX_REASON = 200
export const ENVIRONMENT_NAME_RE = /^[a-z0-9][a-z0-9-]{0,62}$/
export const MAX_VAULT_NAME = 100
export const ROLES: readonly Role[] = Object.freeze(['owner', 'editor', 'viewer'])

/** A new vault's environments: production is owners-only. */
export const DEFAULT_ENVIRONMENTS: readonly EnvironmentInfo[] = Object.freeze([
  Object.freeze({ name: 'development', ownersOnly: false }),
  Object.freeze({ name: 'preview', ownersOnly: false }),
  Object.freeze({ name: 'production', ownersOnly: true }),
])

/** Why a variable name is refused, or null when it is fine. */
export function nameProblem(name: string): string | null {
  if (name.length < 1 || name.length > MAX_NAME_LENGTH) return `a name must be 1 to ${MAX_NAME_LENGTH} characters`
  if (!NAME_RE.test(name)) return 'a name must start with a letter or underscore and hold only letters, digits and underscores'
  if (name.startsWith(RESERVED_PREFIX)) return `names beginning with ${RESERVED_PREFIX} are the client's own settings`
  // JSON parsers refuse it and object assignment drops it: a variable by this name could be
  // stored but never delivered, so it is not a name.
  if (name === '__proto__') return 'the name __proto__ is reserved'
  return null
}

/**
 * What a reference's stored form leads with (references.ts): NUL, which no value may hold
 * (`valueProblem`), so a stored text that starts with it is a reference, never a value.
 */
export const REFERENCE_MARK = '\u0000'

/** Whether a stored (opened) text is a reference's form rather than a value. */
export function isReferenceForm(stored: string): boolean {
  return stored.startsWith(REFERENCE_MARK)
}

/** Why a value is refused, or null when it is fine. */
export function valueProblem(value: string): string | null {
  if (value.length === 0) return 'a value must not be empty'
  // a program's environment cannot carry NUL, and it marks a reference's stored form (references.ts)
  if (value.includes(REFERENCE_MARK)) return 'a value must not hold a NUL character (a program cannot receive one in its environment)'
  if (!isWellFormed(value)) return 'a value must be valid Unicode; it holds a lone UTF-16 surrogate, which cannot be stored as sent'
  if (Buffer.byteLength(value, 'utf8') > MAX_VALUE_BYTES) return `a value must be at most ${MAX_VALUE_BYTES} bytes`
  return null
}

const LONE_SURROGATE = /\p{Cs}/u

/**
 * False for a string holding a lone UTF-16 surrogate (JSON can escape one, `"\ud800"`): UTF-8
 * cannot hold it, and encoding would silently store U+FFFD instead of what was sent.
 */
export function isWellFormed(s: string): boolean {
  return !LONE_SURROGATE.test(s)
}

/** Why an environment name is refused, or null. */
export function environmentNameProblem(name: string): string | null {
  return ENVIRONMENT_NAME_RE.test(name) ? null : 'an environment name must be 1 to 63 lower-case letters, digits or dashes, starting with a letter or digit'
}

/** Why a vault name is refused, or null. */
export function vaultNameProblem(name: string): string | null {
  if (name.length === 0) return 'a vault needs a name'
  if (name.length > MAX_VAULT_NAME) return `a vault name must be at most ${MAX_VAULT_NAME} characters`
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(name)) return 'a vault name must not hold control characters'
  return null
}

export function isRole(s: string): s is Role {
  return (ROLES as readonly string[]).includes(s)
}

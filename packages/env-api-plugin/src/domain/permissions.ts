import type { EnvironmentInfo, Role, VaultAccess } from '../adapters/vault-store.js'
import { fail } from './failure.js'

/**
 * Who may do what (decisions.md). The server administrator acts with an
 * owner's rights (see actor.ts).
 */

/**
 * Whether whoever reached `vault` (a member with their role, the
 * administrator as owner, or a CI identity with its role and environment
 * list) may read or write `env`: the one rule every surface asks. Reading
 * also lets a person push to it and change it on the pages; a CI identity
 * never writes (its sign-in has no scope for it), and reads only the
 * environments of its list when it has one.
 */
export function mayAccess(vault: VaultAccess, env: EnvironmentInfo, mode: 'read' | 'write'): boolean {
  if (!(mode === 'read' ? canReadEnvironment(vault.role, env) : canWriteEnvironment(vault.role, env))) return false
  return ciLimitRefusal(vault, env) === null
}

/** Why a CI identity may not reach an environment its role could, in words; null otherwise (and for anyone else). */
export function ciLimitRefusal(vault: VaultAccess, env: EnvironmentInfo): string | null {
  const limit = (vault as { readonly ciEnvironments?: readonly string[] | null }).ciEnvironments
  if (limit === undefined || limit === null || limit.includes(env.name)) return null
  return `this CI identity is limited to ${limit.join(', ')}`
}

/** The role's part of mayAccess: owners every environment, editors what is not owners-only, viewers none. */
export function canReadEnvironment(role: Role, env: EnvironmentInfo): boolean {
  if (role === 'owner') return true
  if (role === 'editor') return !env.ownersOnly
  return false
}

/** The role's part of mayAccess for changes: same as reading. */
export const canWriteEnvironment = canReadEnvironment

/**
 * Who may decide a push: an owner, or an editor on an environment that is
 * not owners-only; the sender only when the vault does not require a second person.
 */
export function canDecideImport(role: Role, env: EnvironmentInfo, isSender: boolean, requireSecondPerson: boolean): boolean {
  if (!canWriteEnvironment(role, env)) return false
  return !(isSender && requireSecondPerson)
}

/** Who may manage members and environments. */
export function canManageVault(role: Role): boolean {
  return role === 'owner'
}

/** Why a role may not `verb` (read, push to, change) an environment's values, in words. */
export function roleRefusal(role: Role, env: EnvironmentInfo, verb: string): string {
  if (role === 'viewer') return `your role (viewer) cannot ${verb} any environment`
  if (env.ownersOnly) return `your role (${role}) cannot ${verb} owners-only environments`
  return `your role (${role}) cannot ${verb} this environment`
}

/** Why a role may not decide a push, in words. */
export function decideRefusal(role: Role, env: EnvironmentInfo): string {
  if (role === 'viewer') return 'your role (viewer) cannot decide pushes'
  if (role === 'editor' && env.ownersOnly) return 'your role (editor) cannot decide pushes to owners-only environments'
  return 'this vault requires a second person to decide a push; the sender cannot decide their own'
}

/** Why a role may not reveal values on the pages, in words. */
export function revealRefusal(role: Role, env: EnvironmentInfo): string {
  if (role === 'viewer') return 'your role (viewer) cannot read values'
  return roleRefusal(role, env, 'read')
}

/** Why a role may not change variables, in words. */
export function writeRefusal(role: Role): string {
  return role === 'viewer' ? 'your role (viewer) cannot change variables' : `your role (${role}) cannot change owners-only environments`
}

/** Refuses anyone but an owner (and the administrator): `what` they cannot do, in words. */
export function requireOwner(vault: VaultAccess, what: string): void {
  if (!canManageVault(vault.role)) throw fail.forbidden(`your role (${vault.role}) cannot ${what}; only owners can`)
}

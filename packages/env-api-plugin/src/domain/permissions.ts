import type { EnvironmentInfo, Role } from '../adapters/vault-store.js'

/**
 * Who may do what (decisions.md). The server administrator acts with an
 * owner's rights (see actor.ts).
 */

/** Who may read (and so push to, and change on the pages) an environment: owners everything, editors what is not owners-only. */
export function canReadEnvironment(role: Role, env: EnvironmentInfo): boolean {
  if (role === 'owner') return true
  if (role === 'editor') return !env.ownersOnly
  return false
}

/** Who may change variables of an environment: same as reading. */
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

import type { EnvironmentInfo, Role } from './adapters/vault-store.js'

/** Who may read (and so push to) an environment: owners everything, editors what is not owners-only. */
export function canReadEnvironment(role: Role, env: EnvironmentInfo): boolean {
  if (role === 'owner') return true
  if (role === 'editor') return !env.ownersOnly
  return false
}

/** Who may change variables of an environment on the pages: same as reading. */
export const canWriteEnvironment = canReadEnvironment

/**
 * Who may decide a push: an owner, or an editor on an environment that is
 * not owners-only; the sender only when the vault does not require a second person.
 */
export function canDecideImport(
  role: Role,
  env: EnvironmentInfo,
  isSender: boolean,
  requireSecondPerson: boolean,
): boolean {
  if (!canWriteEnvironment(role, env)) return false
  return !(isSender && requireSecondPerson)
}

/** Who may manage members and environments. */
export function canManageVault(role: Role): boolean {
  return role === 'owner'
}
